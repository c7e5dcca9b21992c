// swift-tools-version: 6.0
import PackageDescription

/// ModelConverter: Keras `.h5` models to Core ML classifiers, on Linux, without Python.
///
/// Layers of the design, one target each:
/// - C wrappers: `CHDF5` (libhdf5), `CZip` (libzip, for `.keras` archives), `CProtobufC` (libprotobuf-c), `CComputeKernels` (oneDNN's convolutions and GEMM, chosen by CPU features),
///   `CoreMLSpec` (protoc-c output for `Schemas/`).
/// - `ModelIR`: the typed graph that readers produce and writers consume.
/// - `KerasFormat`: the Keras HDF5 reader.
/// - `CoreMLFormat`: the Core ML `.mlmodel` writer, and the reader back into the IR.
/// - `ImageFormat`: PNG and JPEG photos as model inputs (`CImageCodecs` wraps libpng and libjpeg-turbo).
/// - `ReferenceRuntime`: a float32 interpreter of the IR (direct oracle kernels plus oneDNN fast paths).
/// - `ModelConverter`: the public API tying them together.
/// - `modelconv`: the thin command-line front end.
/// - `CoreMLMutations`: deliberately broken variants of a written `.mlmodel` (and how much each changes),
///   to prove that verification fails wrong conversions; `mutation-check` runs them against a model by hand.
let package = Package(
  name: "ModelConverter",
  products: [
    .library(name: "ModelConverter", targets: ["ModelConverter"]),
    .executable(name: "modelconv", targets: ["modelconv"]),
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
    // libpng and libjpeg-turbo (Debian libpng-dev, libjpeg62-turbo-dev), decoded in C because libjpeg reports errors by longjmp.
    .target(
      name: "CImageCodecs", path: "Sources/CImageCodecs",
      linkerSettings: [.linkedLibrary("png16"), .linkedLibrary("jpeg")]),
    .target(name: "ImageFormat", dependencies: ["CImageCodecs"]),
    // oneDNN (libdnnl-dev) behind a small C interface: convolution and GEMM kernels chosen from the CPU's
    // instruction sets at run time.
    .target(name: "CComputeKernels", path: "Sources/CComputeKernels", linkerSettings: [.linkedLibrary("dnnl")]),
    .target(name: "ModelIR"),
    // Which format a file is, from its bytes: the neutral sniffer every frontend is chosen by.
    .target(name: "ModelFormats"),
    .target(name: "KerasFormat", dependencies: ["CHDF5", "CZip", "ModelIR", "ModelFormats"]),
    .target(name: "CoreMLFormat", dependencies: ["CoreMLSpec", "CProtobufC", "ModelIR"]),
    .target(name: "ReferenceRuntime", dependencies: ["ModelIR", "CComputeKernels"]),
    .target(name: "ModelConverter", dependencies: ["ModelIR", "ModelFormats", "KerasFormat", "CoreMLFormat", "ReferenceRuntime", "ImageFormat"]),
    .executableTarget(name: "modelconv", dependencies: ["ModelConverter"]),
    .target(name: "CoreMLMutations", dependencies: ["CoreMLSpec", "CProtobufC", "CoreMLFormat", "ModelIR", "ReferenceRuntime", "ModelConverter"]),
    .executableTarget(name: "mutation-check", dependencies: ["ModelConverter", "CoreMLMutations"], path: "Sources/MutationCheck"),
    .executableTarget(
      name: "runtime-bench", dependencies: ["ModelConverter", "ModelIR", "KerasFormat", "CoreMLFormat", "ReferenceRuntime"],
      path: "Sources/RuntimeBench"),
    .testTarget(
      name: "ModelConverterTests",
      dependencies: ["ModelConverter", "ModelIR", "KerasFormat", "CoreMLFormat", "ReferenceRuntime", "CHDF5", "CoreMLMutations", "ImageFormat", "CoreMLSpec", "CProtobufC"]),
  ],
  swiftLanguageModes: [.v5]
)
