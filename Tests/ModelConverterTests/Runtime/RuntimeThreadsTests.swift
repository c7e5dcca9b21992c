import Dispatch
import Foundation
import ModelConverter
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// The runtime on several cores: one interpreter shared by threads, and `verify` running samples at once.
@Suite struct RuntimeThreadsTests {
  static let source = Fixtures.digits.appendingPathComponent("digits_cnn.h5")

  /// oneDNN keeps a stream and scratchpad per thread: a shared interpreter gives each thread what a
  /// serial run gives.
  @Test func oneInterpreterOnManyThreadsMatchesSerialRuns() throws {
    let model = try ImageModel.load(contentsOf: Fixtures.url("coremltools/rgb_classifier_program.mlpackage"))
    let photos = (0..<12).map { index in
      RGBImage(width: 16, height: 16, pixels: (0..<(16 * 16 * 3)).map { UInt8(($0 * 7 + index * 31) % 256) })
    }
    let serial = photos.map { model.classify($0) }
    let box = ClassificationBox(count: photos.count)
    DispatchQueue.concurrentPerform(iterations: 4) { worker in
      for index in stride(from: worker, to: photos.count, by: 4) { box.set(index, model.classify(photos[index])) }
    }
    #expect(box.values == serial)
  }

  /// The report does not depend on how many samples run at once (only the timing and the samples run at once do).
  @Test func verifyReportIsTheSameOnOneOrManyThreads() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let converted = directory.appendingPathComponent("Digits.mlpackage")
    try KerasConverter.convert(
      modelAt: Self.source, options: ConversionOptions(format: .mlProgram, precision: .float32)
    ).write(to: converted)
    var options = VerificationOptions(samples: 6)
    options.threads = 1
    var one = try ParityVerifier.verify(source: Self.source, converted: converted, options: options)
    options.threads = 3
    let three = try ParityVerifier.verify(source: Self.source, converted: converted, options: options)
    #expect(one.passed && three.passed)
    #expect(one.memory.samplesAtOnce == 1 && three.memory.samplesAtOnce == 3)
    one.timing = three.timing
    one.memory = three.memory
    #expect(one == three)
  }

  /// The x86 feature flags of /proc/cpuinfo, nil on other CPUs (or without /proc).
  static let x86Flags: Set<String>? = {
    guard let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
      let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags") }),
      let list = line.split(separator: ":").last
    else { return nil }
    return Set(list.split(separator: " ").map(String.init))
  }()

  /// Whether the instruction set is capped on purpose (the kernel tests' `ONEDNN_MAX_CPU_ISA` runs).
  static let isaCapped =
    ProcessInfo.processInfo.environment["ONEDNN_MAX_CPU_ISA"] != nil
    || ProcessInfo.processInfo.environment["DNNL_MAX_CPU_ISA"] != nil

  /// The kernels follow the CPU's features (cpuid flags), whatever model name it reports: on a CPU with
  /// AVX-512 or AVX2 the runtime must not run SSE or generic code (the OpenBLAS "Prescott" fallback this
  /// replaced). Reported as skipped (not passed) where /proc/cpuinfo has no x86 flags or the instruction
  /// set is capped on purpose.
  @Test(.enabled(if: x86Flags != nil && !isaCapped, "an x86 CPU whose instruction set is not capped"))
  func kernelsMatchTheCPUFeatures() throws {
    let flags = try #require(Self.x86Flags)
    let backend = ModelConverterVersion.runtimeBackend
    if ["avx512f", "avx512bw", "avx512vl", "avx512dq"].allSatisfy(flags.contains) {
      #expect(backend.contains("avx512_core"), "CPU has AVX-512 but the runtime uses: \(backend)")
    } else if flags.contains("avx2") {
      #expect(backend.contains("avx2"), "CPU has AVX2 but the runtime uses: \(backend)")
    } else if flags.contains("sse4_1") {
      #expect(!backend.contains("generic"), "CPU has SSE4.1 but the runtime uses: \(backend)")
    }
  }

  @Test func versionVerboseNamesTheKernels() throws {
    let result = try Modelconv.run(["--version", "--verbose"])
    #expect(result.status == 0)
    #expect(result.stdout.contains("runtime kernels: oneDNN"))
    #expect(result.stdout.contains("cpu: "))
  }
}

final class ClassificationBox: @unchecked Sendable {
  private var storage: [Classification?]
  private let lock = NSLock()
  init(count: Int) { storage = Array(repeating: nil, count: count) }
  func set(_ index: Int, _ value: Classification) { lock.withLock { storage[index] = value } }
  var values: [Classification] { lock.withLock { storage.map { $0! } } }
}
