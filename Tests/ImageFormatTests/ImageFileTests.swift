import Foundation
import ImageFormat
import KerasFormat
import TestSupport
import Testing

/// PNG and JPEG decoding, EXIF orientation, Vision's crop-and-scale options and grayscale conversion,
/// against what Pillow made of the same files (`Samples/make_image_fixtures.py`).
@Suite struct ImageFileTests {
  static let folder = Fixtures.url("images")
  static let decodable =
    [
      "alpha.png", "gray.png", "landscape.png", "palette.png", "portrait.jpg", "orientation6.png",
    ] + (1...8).map { "orientation\($0).jpg" }

  static func expected(_ path: String) throws -> (shape: [Int], values: [Float]) {
    try HDF5File(path: folder.appendingPathComponent("expected.h5").path).root.floatDataset(path)
  }

  /// Largest difference between our bytes and Pillow's.
  static func maxDifference(_ ours: [UInt8], _ theirs: [Float]) -> Float {
    zip(ours, theirs).reduce(0) { max($0, abs(Float($1.0) - $1.1)) }
  }

  /// JPEG decoders may round the inverse DCT differently; PNG is lossless and must match exactly.
  static func decodeTolerance(_ name: String) -> Float { name.hasSuffix(".jpg") ? 2 : 0 }

  @Test(arguments: decodable)
  func decodesUprightRGB(_ name: String) throws {
    let image = try ImageFile.read(contentsOf: Self.folder.appendingPathComponent(name))
    let expected = try Self.expected("decoded/\(name)")
    #expect([image.height, image.width, 3] == expected.shape, "\(name)")
    #expect(Self.maxDifference(image.pixels, expected.values) <= Self.decodeTolerance(name), "\(name)")
  }

  /// Pillow rounds to 8 bits between its horizontal and vertical passes, we round once: 1 level apart at most.
  @Test(arguments: decodable, CropAndScale.allCases)
  func fitsLikePillowsAntialiasedBilinear(_ name: String, _ option: CropAndScale) throws {
    let image = try ImageFile.read(contentsOf: Self.folder.appendingPathComponent(name))
    let expected = try Self.expected("fitted/\(name)/\(option.rawValue)")
    let result = ImageScaling.fit(image, width: expected.shape[1], height: expected.shape[0], option: option)
    #expect(Self.maxDifference(result.pixels, expected.values) <= 1 + Self.decodeTolerance(name), "\(name) \(option)")
  }

  @Test(arguments: ["landscape.png", "palette.png", "portrait.jpg"])
  func grayscaleIsBT601Luma(_ name: String) throws {
    let image = try ImageFile.read(contentsOf: Self.folder.appendingPathComponent(name))
    let expected = try Self.expected("gray/\(name)")
    #expect(Self.maxDifference(ImageScaling.grayscale(image), expected.values) <= 1 + Self.decodeTolerance(name))
  }

  @Test func badFilesAreErrorsNamingTheFile() throws {
    func error(_ name: String) -> ImageFileError? {
      do {
        _ = try ImageFile.read(contentsOf: Self.folder.appendingPathComponent(name))
        return nil
      } catch { return error as? ImageFileError }
    }
    guard case .corrupt(let path, _) = error("truncated.png") else {
      Issue.record("truncated.png")
      return
    }
    #expect(path.hasSuffix("truncated.png"))
    guard case .corrupt = error("truncated.jpg") else {
      Issue.record("truncated.jpg")
      return
    }
    guard case .tooLarge(_, let detail) = error("giant.png") else {
      Issue.record("giant.png")
      return
    }
    #expect(detail.contains("100000x100000"))
    guard case .unsupportedFormat(_, let what) = error("animation.gif") else {
      Issue.record("gif")
      return
    }
    #expect(what.contains("GIF"))
    guard case .unsupportedFormat = error("empty.png") else {
      Issue.record("empty")
      return
    }
    guard case .unsupportedFormat = error("text.jpg") else {
      Issue.record("text")
      return
    }
    guard case .unreadable = error("missing.png") else {
      Issue.record("missing")
      return
    }
    guard case .unreadable = error("") else {
      Issue.record("folder")
      return
    }
  }

  @Test func pngRoundTrip() throws {
    let image = try ImageFile.read(contentsOf: Self.folder.appendingPathComponent("landscape.png"))
    let png = try #require(ImageFile.pngData(image))
    #expect(try ImageFile.decode(png, path: "memory") == image)
  }

  /// Every prefix and a byte flipped at every position of a small JPEG and PNG: errors, never crashes.
  @Test func damagedBytesNeverCrash() throws {
    for name in ["orientation6.jpg", "orientation6.png"] {
      let bytes = [UInt8](try Data(contentsOf: Self.folder.appendingPathComponent(name)))
      // Every outcome is an image or the image reader's own error about the file, never another failure.
      var (refused, decoded) = (0, 0)
      func attempt(_ data: [UInt8], _ what: String) {
        do {
          _ = try ImageFile.decode(data, path: name)
          decoded += 1
        } catch {
          #expect(error is ImageFileError, "\(name) \(what): \(error)")
          refused += 1
        }
      }
      for length in 0..<bytes.count { attempt(Array(bytes.prefix(length)), "prefix \(length)") }
      for index in bytes.indices {
        var copy = bytes
        copy[index] ^= 0xFF
        attempt(copy, "byte \(index) flipped")
      }
      // Short prefixes cannot be images; some flips (in pixel data or ignored fields) still decode.
      #expect(refused > 0 && decoded > 0, "\(name): \(refused) refused, \(decoded) decoded")
    }
  }
}
