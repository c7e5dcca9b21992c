// swift-tools-version: 6.1
import PackageDescription

// Uses ModelConverter's build-tool plugin: the models listed in Sources/PluginExample/modelconv.json are
// converted (and verified) when the target builds, and bundled as its resources.
let package = Package(
  name: "PluginExample",
  dependencies: [.package(name: "ModelConverter", path: "../..")],
  targets: [
    .executableTarget(
      name: "PluginExample",
      dependencies: [.product(name: "ModelConverter", package: "ModelConverter")],
      plugins: [.plugin(name: "ModelConverterPlugin", package: "ModelConverter")])
  ],
  swiftLanguageModes: [.v5]
)
