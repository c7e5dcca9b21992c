import Foundation
import ModelIR
import ReferenceRuntime
import Testing

@testable import ModelConverter

/// The named pipelines, declared in one place, and the check every pipeline makes after each pass.
@Suite struct PipelinesTests {
  /// A context in which every registered pass takes part.
  static let everything = Pipelines.Context(
    channelScales: ["x": [2, 3, 4]], computesInFloat32: true, allowsNonFinite: false)

  @Test func everyPassIsRegisteredOnceUnderItsOwnName() {
    let names = Pipelines.registry.map(\.name)
    #expect(Set(names).count == names.count, "a pass is registered twice")
    for entry in Pipelines.registry {
      let pass = entry.make(Self.everything)
      #expect(pass?.name == entry.name, "\(entry.name) makes \(pass?.name ?? "nothing")")
    }
  }

  @Test func pipelinesNameOnlyRegisteredPassesAndUseEveryOne() {
    let registered = Set(Pipelines.registry.map(\.name))
    var used = Set<String>()
    for (pipeline, passes) in Pipelines.declared {
      #expect(Set(passes).isSubset(of: registered), "\(pipeline) names \(Set(passes).subtracting(registered))")
      used.formUnion(passes)
    }
    #expect(used == registered, "registered but in no pipeline: \(registered.subtracting(used))")
    #expect(Pipelines.pipeline("verificationSource").passes.isEmpty, "verify runs the source as read")
    #expect(Pipelines.runtime.names == GraphPipeline.standard.names)
  }

  /// The context leaves passes out: no float16 casts removed for a float16 program, no weight check when
  /// non-finite weights are allowed, no channel scaling without factors.
  @Test func theContextChoosesThePasses() {
    let names = Pipelines.pipeline("conversion", context: .init(computesInFloat32: false, allowsNonFinite: true)).names
    #expect(
      !names.contains("remove-float16-casts") && !names.contains("check-weight-values")
        && !names.contains("scale-input-channels"))
    let all = Pipelines.pipeline("conversion", context: Self.everything).names
    #expect(
      all.first == "scale-input-channels" && all.last == "check-weight-values" && all.contains("remove-float16-casts"))
  }

  static func identityGraph() throws -> Graph {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 2, 3]))
    let y = try builder.add(.activation(.relu), name: "relu", inputs: [x])
    return builder.build(outputs: [y])
  }

  /// The channel scaling runs once, before the rewrites repeat: each channel is multiplied by its
  /// factor exactly once (relu of ones times (2, 3, 4) is (2, 3, 4) at every pixel).
  @Test func channelScalesRunOnce() throws {
    var graph = try Self.identityGraph()
    try Pipelines.pipeline("conversion", context: Self.everything).run(&graph)
    let output = try #require(
      Interpreter(graph: graph).run([Tensor(shape: [2, 2, 3], values: Array(repeating: 1, count: 12))]).first)
    #expect(output.values == Array([[Float]](repeating: [2, 3, 4], count: 4).joined()))
  }

  /// A pass that renames an output is stopped by name: the pipeline checks the interface after every pass.
  struct RenamingPass: GraphPass {
    let name = "rename-output"
    func run(_ graph: inout Graph) throws { try graph.rename(graph.outputs[0], to: "renamed") }
  }

  @Test func aPassThatChangesTheInterfaceIsStopped() throws {
    var graph = try Self.identityGraph()
    #expect {
      try GraphPipeline([CancelTransposesPass(), RenamingPass()]).run(&graph)
    } throws: { error in
      guard case GraphError.passChangedInterface(let pass, let detail) = error else { return false }
      return pass == "rename-output" && detail.contains("outputs") && detail.contains("renamed")
    }
  }
}
