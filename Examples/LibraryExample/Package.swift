// swift-tools-version: 6.0
// The library example of Docs/Library.md as a package of its own, depending on ModelConverter as a user's
// package would (here by path; from a clone, `.package(url: "<your clone's URL>", branch: "main")`).
// `Scripts/check-example.sh` checks that main.swift is the code in Docs/Library.md, builds it and runs it.
import PackageDescription

let package = Package(
  name: "LibraryExample",
  dependencies: [
    .package(name: "ModelConverter", path: "../..")
  ],
  targets: [
    .executableTarget(
      name: "LibraryExample",
      dependencies: [.product(name: "ModelConverter", package: "ModelConverter")])
  ]
)
