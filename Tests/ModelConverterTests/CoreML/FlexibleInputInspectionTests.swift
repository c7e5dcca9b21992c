import CoreMLReader
import Foundation
import ModelConverter
import TestSupport
import Testing

/// Flexible inputs of Core ML files coremltools 9.0 wrote (`Samples/make_flexible_coreml.py`): ranges and
/// enumerations of array shapes and image sizes, read as `load_spec` reads them and shown as Xcode does.
@Suite struct FlexibleInputInspectionTests {
  struct Expected: Decodable {
    struct Input: Decodable {
      var name: String
      var kind: String
      var shape: [Int]?
      var width: Int?
      var height: Int?
      var shapeRange: [[Int]]?
      var enumeratedShapes: [[Int]]?
      var imageSizeRange: [[Int]]?
      var enumeratedSizes: [[Int]]?
    }
    struct Model: Decodable {
      var specificationVersion: Int
      var inputs: [Input]
    }
    var models: [String: Model]
  }

  static let folder = Fixtures.url("flexible_coreml")

  @Test(arguments: ["range.mlpackage", "enumerated.mlmodel", "image_range.mlmodel", "image_enumerated.mlpackage"])
  func declaredFlexibilityIsRead(_ name: String) throws {
    let expected = try #require(
      try JSONDecoder().decode(
        Expected.self, from: Data(contentsOf: Self.folder.appendingPathComponent("expected.json"))
      )
      .models[name])
    let inspection = try ModelInspector.inspect(contentsOf: Self.folder.appendingPathComponent(name))
    #expect(inspection.inputs.count == expected.inputs.count)
    for (feature, want) in zip(inspection.inputs, expected.inputs) {
      #expect(feature.name == want.name)
      let type = feature.type
      #expect(type.shapeRange == want.shapeRange)
      #expect(type.enumeratedShapes == want.enumeratedShapes)
      #expect(type.sizeRange == want.imageSizeRange)
      #expect(type.enumeratedSizes == want.enumeratedSizes)
      if want.kind == "imageType" {
        #expect(type.kind == "image" && type.width == want.width && type.height == want.height)
      } else {
        #expect(type.kind == "multiArray" && type.shape == want.shape)
      }
    }
  }

  /// The outline (what describes pipelines and every other model type) reads the same from the wire.
  @Test(arguments: ["range.mlpackage", "enumerated.mlmodel", "image_range.mlmodel", "image_enumerated.mlpackage"])
  func theOutlineReadsTheSame(_ name: String) throws {
    let expected = try #require(
      try JSONDecoder().decode(
        Expected.self, from: Data(contentsOf: Self.folder.appendingPathComponent("expected.json"))
      )
      .models[name])
    let outline = try CoreMLModelOutline.read(contentsOf: Self.folder.appendingPathComponent(name))
    let input = try #require(outline.inputs.first)
    let want = try #require(expected.inputs.first)
    #expect(input.sizeRanges.map { [$0.lower, $0.upper ?? -1] } == (want.shapeRange ?? []))
    #expect(input.enumeratedShapes == (want.enumeratedShapes ?? []))
    #expect(input.imageSizeRanges.map { [$0.lower, $0.upper ?? -1] } == (want.imageSizeRange ?? []))
    #expect(input.enumeratedImageSizes == (want.enumeratedSizes ?? []))
  }

  /// As Xcode's model view lists them: each allowed size, ranges as lower...upper (no upper: unbounded),
  /// and the default when it is not the first listed.
  @Test func flexibilityIsShownAsXcodeDoes() throws {
    func shown(_ name: String) throws -> String {
      let inspection = try ModelInspector.inspect(contentsOf: Self.folder.appendingPathComponent(name))
      return ModelInspection.xcodeType(try #require(inspection.inputs.first).type)
    }
    #expect(try shown("range.mlpackage") == "MultiArray (Float32 1 × 3 × 8...64 × 8...64, default 1 × 3 × 16 × 16)")
    #expect(try shown("enumerated.mlmodel") == "MultiArray (Float32 1 × 3 × 16 × 16 | 1 × 3 × 32 × 24)")
    #expect(try shown("image_range.mlmodel") == "Image (Color RGB 16...128 × 16..., default 32 × 32)")
    #expect(try shown("image_enumerated.mlpackage") == "Image (Color RGB 32 × 32 | 64 × 48)")
  }

  /// Where a written layer cannot keep the source's sizes (the transposes back to Core ML's layout at its
  /// output), a conversion keeps the default size and says so, naming the layer.
  @Test func aConversionSaysTheFlexibilityIsNotKept() throws {
    let model = try Converter.convert(
      modelAt: Self.folder.appendingPathComponent("enumerated.mlmodel"), options: ConversionOptions())
    #expect(
      model.sourceNotes.contains {
        $0.contains(
          "input 'x' accepts 1,3,16,16 | 1,3,32,24 in the source; the converted model takes its default size only: layer '"
        )
      })
    // The lost sizes are part of the interface verify checks.
    let url = try Fixtures.temporaryDirectory().appendingPathComponent("Fixed.mlmodel")
    try model.write(to: url)
    let report = try ParityVerifier.verify(
      source: Self.folder.appendingPathComponent("enumerated.mlmodel"), converted: url,
      options: VerificationOptions(samples: 1))
    #expect(!report.passed)
    #expect(
      report.interface?.differences == [
        "input 'x' allows the sizes 1 × 3 × 16 × 16 | 1 × 3 × 32 × 24 in the source, one size in the model"
      ])
  }

  /// An ML Program whose function leaves the flexible dimensions unknown is read at the description's
  /// default size: its conversion computes what the program computes there (every layer within the
  /// float16 program's tolerance), and verify reports only the sizes that were not kept.
  @Test(arguments: ["range.mlpackage", "image_enumerated.mlpackage"])
  func aProgramIsReadAtItsDefaultSize(_ name: String) throws {
    let source = Self.folder.appendingPathComponent(name)
    let url = try Fixtures.temporaryDirectory().appendingPathComponent("Fixed.mlmodel")
    try Converter.convert(modelAt: source, options: ConversionOptions()).write(to: url)
    let report = try ParityVerifier.verify(source: source, converted: url, options: VerificationOptions(samples: 2))
    #expect(report.layers.allSatisfy(\.passed) && report.outputs.allSatisfy(\.passed))
    #expect(report.interface?.differences.count == 1)
    #expect(report.interface?.differences.first?.contains("in the source, one size in the model") == true)
  }
}
