import Foundation
import KerasTestSupport
import ModelConverter
import TestSupport
import Testing

@testable import KerasFormat

/// The Keras layer registry is the one list of converted classes: the supported set, the README's
/// layer table and the wrappers' inner-layer lists all follow it.
@Suite struct KerasLayerRegistryTests {
  static var registered: Set<String> { Set(KerasLayerRegistry.handlers.keys) }

  // MARK: The supported set

  /// Supported = registry keys + InputLayer, nothing else: a name kept by hand outside the registry fails here.
  @Test func supportedClassesAreTheRegistryPlusInputLayer() {
    #expect(KerasLayerCatalog.supportedClassNames == Self.registered.union(["InputLayer"]))
    #expect(KerasLayerCatalog.acceptedWithoutHandler == ["InputLayer"])
    #expect(!Self.registered.contains("InputLayer"))
  }

  /// No class name is registered by two families (the merge would otherwise keep one silently).
  @Test func familiesAreDisjoint() {
    let counted = KerasLayerRegistry.families.map(\.handlers.count).reduce(0, +)
    #expect(counted == KerasLayerRegistry.handlers.count)
    #expect(KerasLayerRegistry.families.allSatisfy { !$0.handlers.isEmpty })
  }

  /// Aliases are registered with their classes; Deconvolution2D (once missing from the hand-kept list) among them.
  @Test(arguments: [
    ["Conv2D", "Convolution2D"], ["SeparableConv2D", "SeparableConvolution2D"],
    ["Conv2DTranspose", "Convolution2DTranspose", "Deconvolution2D"], ["MaxPooling2D", "MaxPool2D"],
    ["AveragePooling2D", "AvgPool2D"],
    ["GlobalAveragePooling2D", "GlobalAvgPool2D"], ["GlobalMaxPooling2D", "GlobalMaxPool2D"],
    ["Conv1D", "Convolution1D"],
    ["MaxPooling1D", "MaxPool1D"], ["AveragePooling1D", "AvgPool1D"], ["GlobalAveragePooling1D", "GlobalAvgPool1D"],
    ["GlobalMaxPooling1D", "GlobalMaxPool1D"],
  ])
  func aliasesAreRegistered(_ names: [String]) {
    for name in names { #expect(KerasLayerCatalog.supportedClassNames.contains(name), "\(name)") }
  }

  /// The wrappers' own class lists only name registered classes.
  @Test func wrapperListsNameRegisteredClasses() {
    #expect(KerasGraphImporter.lastAxisClassNames.isSubset(of: Self.registered))
    #expect(Set(KerasGraphImporter.recurrentClassNames).isSubset(of: Self.registered))
  }

  // MARK: README

  /// The class names in the first column of the README's first table under "Keras layers and their Core ML layers".
  static func readmeClassNames() throws -> Set<String> {
    let text = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("Docs/Keras.md"), encoding: .utf8)
    let lines = text.components(separatedBy: "\n")
    let heading = try #require(lines.firstIndex(of: "## Keras layers and their Core ML layers"))
    let header = try #require(lines[heading...].firstIndex { $0.hasPrefix("| Keras |") })
    let rows = lines[(header + 2)...].prefix { $0.hasPrefix("|") }
    var names: Set<String> = []
    for row in rows {
      var cell = String(row.dropFirst(2).components(separatedBy: " | ")[0])
      // Code spans hold options and values (`reset_after=True`), not classes.
      cell = cell.replacingOccurrences(of: "`[^`]*`", with: "", options: .regularExpression)
      for word in cell.components(separatedBy: CharacterSet.alphanumerics.inverted) where word.count >= 2 {
        guard word.first!.isUppercase else { continue }
        names.insert(word)
        // "SpatialDropout1D/2D/3D": the later parts take the stem of the first.
        if word.hasSuffix("1D"), cell.contains(word + "/2D") {
          names.insert(word.dropLast(2) + "2D")
          if cell.contains(word + "/2D/3D") { names.insert(word.dropLast(2) + "3D") }
        }
      }
    }
    return names
  }

  /// Every registered class has a row (or a place in a row) of the README table.
  @Test func everyRegisteredClassIsInTheReadme() throws {
    let missing = Self.registered.subtracting(try Self.readmeClassNames())
    #expect(missing.isEmpty, "registered but not in the Docs/Keras.md table: \(missing.sorted())")
  }

  /// Every class the README table names is registered, or is one of the documented others.
  @Test func everyReadmeClassIsRegisteredOrDocumented() throws {
    let documented = KerasLayerCatalog.acceptedWithoutHandler.union(KerasModelConfig.modelClassNames)
      .union(KerasCustomLayers.neverCustom).union(KerasLegacyConfig.legacyClassNames)
    // Words of the table's prose that are not classes ("Core ML's", "Keras 3's", "Conv2D/Dense/Depthwise/Separable").
    let prose: Set<String> = ["Core", "ML", "Keras", "Depthwise", "Separable"]
    let unknown = try Self.readmeClassNames().subtracting(Self.registered).subtracting(documented).subtracting(prose)
    #expect(unknown.isEmpty, "in the Docs/Keras.md table but not registered: \(unknown.sorted())")
  }

  /// The README reader sees the table (a check that reads nothing would pass anything).
  @Test func readmeTableIsRead() throws {
    let names = try Self.readmeClassNames()
    #expect(names.isSuperset(of: ["Conv2D", "SpatialDropout3D", "LSTM", "Lambda", "MaxPool1D"]))
    #expect(!names.contains("ReflectionPadding2D"))
  }

  // MARK: Conversions

  /// A Conv2DTranspose model with its layers renamed to Keras 1's Deconvolution2D converts and matches the
  /// original's real-Keras outputs (the reference file of the unrenamed fixture).
  ///
  /// A top-level Deconvolution2D entry is renamed to Conv2DTranspose when read (`KerasLegacyConfig`), so
  /// this guards the whole path but would also pass without the registry's Deconvolution2D entry; that
  /// entry is checked by `aliasesAreRegistered`.
  @Test(arguments: ["tfkeras215", "keras3"])
  func deconvolution2DConvertsAndVerifies(_ dialect: String) throws {
    let fixture = "layers/\(dialect)/conv2d_transpose"
    let source = try KerasFileEditing.edited(
      fixture + ".h5", [("\"class_name\": \"Conv2DTranspose\"", "\"class_name\": \"Deconvolution2D\"")])
    defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
    #expect(try !KerasFileEditing.modelConfig(source).contains("Conv2DTranspose"))
    let output = source.deletingLastPathComponent().appendingPathComponent("model.mlmodel")
    try KerasConverter.convert(modelAt: source).write(to: output)
    let report = try ParityVerifier.verify(
      source: source, converted: output,
      options: VerificationOptions(samples: 2, reference: Fixtures.url(fixture + ".reference.h5")))
    #expect(report.passed, "\(report.outputs.map { "\($0.name): \($0.maxAbsoluteError)" })")
    #expect(report.outputs.contains { $0.comparedWith == .referenceOutputs && $0.elements > 0 })
  }

  /// Unknown classes are all listed in one error, before any layer is converted: the first layer's
  /// invalid strides would fail the conversion, yet the error is about the two unknown classes.
  @Test func unknownClassesAreListedTogetherBeforeAnyWork() throws {
    let source = try KerasFileEditing.edited(
      "layers/tfkeras215/conv2d_transpose.h5",
      [
        ("\"strides\": [2, 2]", "\"strides\": [0, 0]"),
        (
          "\"class_name\": \"Conv2DTranspose\", \"config\": {\"name\": \"deconv_s1_valid\"",
          "\"class_name\": \"MadeUpLayer\", \"config\": {\"name\": \"deconv_s1_valid\""
        ),
      ])
    defer { try? FileManager.default.removeItem(at: source.deletingLastPathComponent()) }
    let twoUnknown = try KerasFileEditing.edited(
      "layers/tfkeras215/conv2d_transpose.h5",
      [
        (
          "\"class_name\": \"Conv2DTranspose\", \"config\": {\"name\": \"deconv_s2_same\"",
          "\"class_name\": \"OtherMadeUpLayer\", \"config\": {\"name\": \"deconv_s2_same\""
        ),
        (
          "\"class_name\": \"Conv2DTranspose\", \"config\": {\"name\": \"deconv_s1_valid\"",
          "\"class_name\": \"MadeUpLayer\", \"config\": {\"name\": \"deconv_s1_valid\""
        ),
      ])
    defer { try? FileManager.default.removeItem(at: twoUnknown.deletingLastPathComponent()) }

    for (url, expected) in [
      (source, ["deconv_s1_valid: MadeUpLayer"]),
      (twoUnknown, ["deconv_s1_valid: MadeUpLayer", "deconv_s2_same: OtherMadeUpLayer"]),
    ] {
      let error = HostileKerasTests.conversionError(url)
      guard case .unsupportedLayers(let path, let layers)? = error as? KerasReaderError else {
        Issue.record("expected unsupportedLayers, got \(String(describing: error))")
        continue
      }
      #expect(path == url.path)
      #expect(layers.map { "\($0.name): \($0.className)" }.sorted() == expected)
    }
  }
}
