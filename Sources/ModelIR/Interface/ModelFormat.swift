/// The two Core ML model formats a graph can be written as.
public enum ModelFormat: String, Sendable, Equatable, CaseIterable, Codable {
  /// A `NeuralNetwork` (or classifier) in one `.mlmodel` file: classic layers, iOS 11 and later.
  case neuralNetwork = "neuralnetwork"
  /// An ML Program in an `.mlpackage` folder: MIL operations and a weight file, iOS 15 and later.
  case mlProgram = "mlprogram"

  /// The format a file name asks for: `.mlpackage` is an ML Program, anything else a neural network.
  public static func forPath(_ path: String) -> ModelFormat {
    path.hasSuffix(".mlpackage") || path.hasSuffix(".mlpackage/") ? .mlProgram : .neuralNetwork
  }

  /// The file name extension the format is saved with.
  public var fileExtension: String { self == .mlProgram ? "mlpackage" : "mlmodel" }
}

/// The oldest OS release a model must load on (coremltools' `minimum_deployment_target`).
///
/// Each release reads Core ML specifications up to a version, and ML Programs in opsets up to one:
/// iOS 11 / macOS 10.13: 1; iOS 11.2: 2; iOS 12 / macOS 10.14: 3; iOS 13 / macOS 10.15: 4; iOS 14 /
/// macOS 11: 5; iOS 15 / macOS 12: 6 and opset CoreML5; iOS 16 / macOS 13: 7, CoreML6; iOS 17 /
/// macOS 14: 8, CoreML7; iOS 18 / macOS 15: 9, CoreML8. tvOS follows iOS; watchOS 4-11 match iOS 11-18.
public struct DeploymentTarget: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
  /// The newest specification version the release reads.
  public let specificationVersion: Int
  /// How the user named it (`iOS15`, `macOS12`, ...).
  public let name: String

  public init(specificationVersion: Int, name: String) {
    self.specificationVersion = specificationVersion
    self.name = name
  }

  public var description: String { name }

  /// The MIL opset of this release, or nil before iOS 15 (no ML Programs).
  public var opset: String? { specificationVersion >= 6 ? "CoreML\(specificationVersion - 1)" : nil }

  /// The specification version an opset needs.
  public static func specificationVersion(forOpset opset: String) -> Int? {
    guard opset.hasPrefix("CoreML"), let n = Int(opset.dropFirst(6)), n >= 5, n <= 8 else { return nil }
    return n + 1
  }

  public static let iOS13 = DeploymentTarget(specificationVersion: 4, name: "iOS13")
  public static let iOS14 = DeploymentTarget(specificationVersion: 5, name: "iOS14")
  public static let iOS15 = DeploymentTarget(specificationVersion: 6, name: "iOS15")
  public static let iOS16 = DeploymentTarget(specificationVersion: 7, name: "iOS16")
  public static let iOS17 = DeploymentTarget(specificationVersion: 8, name: "iOS17")
  public static let iOS18 = DeploymentTarget(specificationVersion: 9, name: "iOS18")

  /// Every name `parse` accepts, by platform, with the specification version of its first release.
  package static let releases: [(platform: String, versions: [(String, Int)])] = [
    ("iOS", [("11", 1), ("11.2", 2), ("12", 3), ("13", 4), ("14", 5), ("15", 6), ("16", 7), ("17", 8), ("18", 9)]),
    ("tvOS", [("11", 1), ("11.2", 2), ("12", 3), ("13", 4), ("14", 5), ("15", 6), ("16", 7), ("17", 8), ("18", 9)]),
    (
      "macOS",
      [("10.13", 1), ("10.13.2", 2), ("10.14", 3), ("10.15", 4), ("11", 5), ("12", 6), ("13", 7), ("14", 8), ("15", 9)]
    ),
    ("watchOS", [("4", 1), ("4.2", 2), ("5", 3), ("6", 4), ("7", 5), ("8", 6), ("9", 7), ("10", 8), ("11", 9)]),
  ]

  /// The first release of each platform that loads a specification version (`["iOS": "15", "macOS": "12",
  /// "tvOS": "15", "watchOS": "8"]` for 6), or an empty list for a version newer than every release known here.
  public static func oldestReleases(forSpecificationVersion version: Int) -> [(platform: String, version: String)] {
    releases.compactMap { release in
      release.versions.first { $0.1 >= version }.map { (release.platform, $0.0) }
    }
  }

  /// All accepted names, for help texts and errors.
  public static var allNames: [String] { releases.flatMap { r in r.versions.map { r.platform + $0.0 } } }

  /// Parses `iOS15`, `macOS12`, `macOS10.15`, `macOS10_15`, `watchOS8`, `tvOS17` (case-insensitive platform).
  public static func parse(_ text: String) -> DeploymentTarget? {
    let normalized = text.replacingOccurrences(of: "_", with: ".")
    for (platform, versions) in releases where normalized.lowercased().hasPrefix(platform.lowercased()) {
      let version = String(normalized.dropFirst(platform.count))
      if let match = versions.first(where: { $0.0 == version }) {
        return DeploymentTarget(specificationVersion: match.1, name: platform + match.0)
      }
    }
    return nil
  }
}
