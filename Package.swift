// swift-tools-version: 6.1
import PackageDescription

/// ModelConverter: Keras and Core ML models to Core ML classifiers, on Linux, without Python.
///
/// Readers (frontends) -> one IR -> passes -> writers / runtime, one target each:
/// - C wrappers: `CHDF5` (libhdf5), `CZip` (libzip, for `.keras` archives), `CProtobufC` (libprotobuf-c), `CComputeKernels` (oneDNN's convolutions and GEMM, chosen by CPU features),
///   `CoreMLSpec` (protoc-c output for `Schemas/`), `ONNXSpec` (protoc-c output for `Schemas/ONNX/`).
/// - `ModelIR`: the typed graph that readers produce and writers consume, and the graph passes.
/// - `ModelFormats`: the format sniffer (what a file is, by content).
/// - `ONNXFormat`: the ONNX reader (`ModelProto` and `TensorProto` files into typed Swift values) and importer into the
///   IR (operator handlers in `Import/Operators/`, registered by op type and since-version).
/// - `KerasFormat`: the Keras reader (`.h5` through libhdf5, `.keras` archives; layer handlers in `Import/Layers/`).
/// - `CoreMLReader`: `.mlmodel`/`.mlpackage` into the IR (classic layers, MIL operations in `Import/MILOperations/`),
///   Apple's documented rules. `CoreMLNeuralNetworkWriter` and `CoreMLProgramWriter`: the two writers.
///   `CoreMLCommon`: what they share. `CoreMLFormat`: all four in one import, and the writer for each format.
/// - `ImageFormat`: PNG and JPEG photos as model inputs (`CImageCodecs` wraps libpng and libjpeg-turbo).
/// - `ReferenceRuntime`: a float32 interpreter of the IR (direct oracle kernels plus oneDNN fast paths).
/// - `ModelConverter`: the public API: the frontend registry (`Frontends/`), `Converter`, verification,
///   inspection, prediction.
/// - `modelconv`: the thin command-line front end.
/// - `CoreMLMutations`: deliberately broken variants of a written `.mlmodel` (and how much each changes),
///   to prove that verification fails wrong conversions; `mutation-check` runs them against a model by hand.

let package = Package(
  name: "ModelConverter",
  products: [
    .library(name: "ModelConverter", targets: ["ModelConverter"]),
    .executable(name: "modelconv", targets: ["modelconv"]),
    // Conversion in the build: a target with a modelconv.json gets its models converted (and verified) as
    // resources; `swift package convert-models` runs the manifest in place.
    .plugin(name: "ModelConverterPlugin", targets: ["ModelConverterPlugin"]),
    .plugin(name: "ConvertModelsCommand", targets: ["ConvertModelsCommand"]),
  ],
  targets: [
    .systemLibrary(
      name: "CHDF5", path: "Sources/CHDF5", pkgConfig: "hdf5-serial",
      providers: [.apt(["libhdf5-dev"])]),
    .systemLibrary(
      name: "CProtobufC", path: "Sources/CProtobufC", pkgConfig: "libprotobuf-c",
      providers: [.apt(["libprotobuf-c-dev"])]),
    .systemLibrary(
      name: "CZip", path: "Sources/CZip", pkgConfig: "libzip",
      providers: [.apt(["libzip-dev"])]),
    .target(name: "CoreMLSpec", dependencies: ["CProtobufC"], path: "Sources/CoreMLSpec"),
    .target(name: "ONNXSpec", dependencies: ["CProtobufC"], path: "Sources/ONNXSpec"),
    // libpng and libjpeg-turbo (Debian libpng-dev, libjpeg62-turbo-dev), decoded in C because libjpeg reports errors by longjmp.
    .target(
      name: "CImageCodecs", path: "Sources/CImageCodecs",
      linkerSettings: [.linkedLibrary("png16"), .linkedLibrary("jpeg")]),
    .target(name: "ImageFormat", dependencies: ["CImageCodecs", "ModelFormats"]),
    // oneDNN (libdnnl-dev) behind a small C interface: convolution and GEMM kernels chosen from the CPU's
    // instruction sets at run time.
    .target(name: "CComputeKernels", path: "Sources/CComputeKernels", linkerSettings: [.linkedLibrary("dnnl")]),
    .target(name: "ModelIR", dependencies: ["ModelFormats"]),
    // Which format a file is, from its bytes: the neutral sniffer every frontend is chosen by.
    .target(name: "ModelFormats", dependencies: ["CProtobufC"]),
    // ONNX: model and tensor files read through libprotobuf-c into plain Swift values, every number checked.
    .target(
      name: "ONNXFormat", dependencies: ["ONNXSpec", "CProtobufC", "ModelIR", "ModelFormats"], exclude: ["README.md"]),
    .target(name: "KerasFormat", dependencies: ["CHDF5", "CZip", "ModelIR", "ModelFormats"]),
    // TensorFlow Lite: `.tflite` FlatBuffers read by a small bounds-checked reader written from schema.fbs.
    .target(name: "TFLiteFormat", dependencies: ["ModelIR", "ModelFormats"]),
    // Core ML: what the reader and both writers share (package and weight-file I/O, the model
    // description, writer options), the reader (into the IR, with Apple's documented rules), the
    // classic neural-network writer, the ML Program writer, and `CoreMLFormat`, which imports them all.
    .target(name: "CoreMLCommon", dependencies: ["CoreMLSpec", "CProtobufC", "ModelIR", "ModelFormats"]),
    .target(
      name: "CoreMLReader", dependencies: ["CoreMLCommon", "CoreMLSpec", "CProtobufC", "ModelIR", "ModelFormats"]),
    .target(name: "CoreMLProgramWriter", dependencies: ["CoreMLCommon", "CoreMLSpec", "CProtobufC", "ModelIR"]),
    // The classic writer lowers the ML Program emitter's operations into rank-N layers for graphs its
    // rank-5 layers cannot hold (as coremltools' neural-network backend lowers MIL).
    .target(
      name: "CoreMLNeuralNetworkWriter",
      dependencies: ["CoreMLCommon", "CoreMLProgramWriter", "CoreMLSpec", "CProtobufC", "ModelIR"]),
    .target(
      name: "CoreMLFormat",
      dependencies: ["CoreMLCommon", "CoreMLReader", "CoreMLNeuralNetworkWriter", "CoreMLProgramWriter", "ModelIR"]),
    .target(name: "ReferenceRuntime", dependencies: ["ModelIR", "CComputeKernels"]),
    .target(
      name: "ModelConverter",
      dependencies: [
        "ModelIR", "ModelFormats", "KerasFormat", "CoreMLFormat", "ONNXFormat", "TFLiteFormat", "ReferenceRuntime",
        "ImageFormat",
      ]),
    .executableTarget(name: "modelconv", dependencies: ["ModelConverter", "ModelFormats"]),
    .plugin(name: "ModelConverterPlugin", capability: .buildTool(), dependencies: ["modelconv"]),
    .plugin(
      name: "ConvertModelsCommand",
      capability: .command(
        intent: .custom(
          verb: "convert-models",
          description: "Convert (and verify) the models of each target's modelconv.json in place"),
        permissions: [.writeToPackageDirectory(reason: "writes the converted models where modelconv.json says")]),
      dependencies: ["modelconv"]),
    .target(
      name: "CoreMLMutations",
      dependencies: ["CoreMLSpec", "CProtobufC", "CoreMLFormat", "ModelIR", "ReferenceRuntime", "ModelConverter"]),
    .executableTarget(
      name: "mutation-check", dependencies: ["ModelConverter", "CoreMLMutations"], path: "Sources/MutationCheck"),
    .executableTarget(
      name: "runtime-bench",
      dependencies: ["ModelConverter", "ModelIR", "KerasFormat", "CoreMLFormat", "ReferenceRuntime"],
      path: "Sources/RuntimeBench"),
    // Tests. Each module's test target depends on that module and the test support targets only (the
    // reference runtime where it is the oracle), so its tests prove the module stands alone
    // (`swift test --filter KerasFormatTests` runs one). Tests that need the whole converter (conversions,
    // verification, the frontends together) are end-to-end: in ModelConverterTests (by area:
    // Keras/, ONNX/, CoreML/, Writers/, Runtime/) and modelconvTests (the built command line).
    // TestSupport: fixture paths, temporary folders, running the built modelconv; the others read and
    // edit the fixtures' own formats.
    .target(name: "TestSupport", dependencies: ["ModelFormats"], path: "Tests/TestSupport"),
    .target(
      name: "KerasTestSupport", dependencies: ["TestSupport", "KerasFormat", "CHDF5"], path: "Tests/KerasTestSupport"),
    .target(name: "CoreMLTestSupport", dependencies: ["TestSupport", "CoreMLReader"], path: "Tests/CoreMLTestSupport"),
    .target(
      name: "ONNXTestSupport", dependencies: ["TestSupport", "ONNXFormat", "ModelIR", "ReferenceRuntime"],
      path: "Tests/ONNXTestSupport"),
    .testTarget(name: "ModelIRTests", dependencies: ["ModelIR", "ReferenceRuntime", "TestSupport"]),
    .testTarget(name: "ModelFormatsTests", dependencies: ["ModelFormats", "TestSupport"]),
    .testTarget(name: "KerasFormatTests", dependencies: ["KerasFormat", "TestSupport", "KerasTestSupport"]),
    .testTarget(name: "ONNXFormatTests", dependencies: ["ONNXFormat", "TestSupport", "ONNXTestSupport"]),
    .testTarget(name: "CoreMLReaderTests", dependencies: ["CoreMLReader", "TestSupport", "CoreMLTestSupport"]),
    .testTarget(name: "CoreMLCommonTests", dependencies: ["CoreMLCommon"]),
    // The writers are read back by the Core ML reader, the oracle of Apple's documented format.
    .testTarget(
      name: "NeuralNetworkWriterTests",
      dependencies: ["CoreMLNeuralNetworkWriter", "CoreMLReader", "TestSupport", "CoreMLTestSupport"]),
    .testTarget(name: "ProgramWriterTests", dependencies: ["CoreMLProgramWriter", "CoreMLReader"]),
    .testTarget(name: "CoreMLMutationsTests", dependencies: ["CoreMLMutations", "CoreMLReader", "TestSupport"]),
    .testTarget(name: "ReferenceRuntimeTests", dependencies: ["ReferenceRuntime", "ModelIR", "TestSupport"]),
    .testTarget(name: "ImageFormatTests", dependencies: ["ImageFormat", "TestSupport", "KerasTestSupport"]),
    .testTarget(
      name: "ModelConverterTests",
      dependencies: [
        "ModelConverter", "ModelIR", "ModelFormats", "KerasFormat", "ONNXFormat", "TFLiteFormat", "CoreMLFormat",
        "CoreMLCommon", "CoreMLReader",
        "CoreMLNeuralNetworkWriter", "CoreMLProgramWriter", "CoreMLSpec", "CProtobufC", "ReferenceRuntime",
        "ImageFormat", "CoreMLMutations",
        "CHDF5", "TestSupport", "KerasTestSupport", "CoreMLTestSupport", "ONNXTestSupport",
      ],
      exclude: ["ONNX/BackendPassList.txt", "ONNX/BackendConversionPassList.txt"]),
    .testTarget(
      name: "modelconvTests",
      dependencies: [
        "ModelConverter", "CoreMLFormat", "KerasFormat", "TestSupport", "KerasTestSupport", "CoreMLTestSupport",
      ]),
    // A toy source format, defined only in this target, plugged in through the frontend protocol and
    // registry: inspect, convert, verify and exit codes with no module above naming it.
    .testTarget(
      name: "FrontendContractTests",
      dependencies: [
        "modelconv", "ModelConverter", "ModelFormats", "ModelIR", "CoreMLFormat", "ReferenceRuntime", "TestSupport",
      ]),
  ],
  swiftLanguageModes: [.v5]
)
