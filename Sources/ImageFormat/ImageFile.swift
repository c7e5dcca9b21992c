import CImageCodecs
import Foundation

/// Reads PNG and JPEG files (recognised by content, not by name) into upright RGB images.
public enum ImageFile {
  /// Files larger than this are not read.
  public static let maximumFileBytes = 256 << 20
  /// Images with more pixels than this (100 megapixels) are refused before their pixels are decoded.
  public static let maximumPixels: UInt64 = 100_000_000

  /// The image, turned as its EXIF orientation says (JPEG APP1 `Exif` or PNG `eXIf`).
  public static func read(contentsOf url: URL) throws -> RGBImage {
    var info = stat()
    guard stat(url.path, &info) == 0 else {
      throw ImageFileError.unreadable(path: url.path, reason: String(cString: strerror(errno)))
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw ImageFileError.unreadable(path: url.path, reason: "not a regular file")
    }
    guard Int(info.st_size) <= maximumFileBytes else {
      throw ImageFileError.tooLarge(
        path: url.path, detail: "\(info.st_size) bytes is more than the \(maximumFileBytes >> 20) MiB limit")
    }
    guard let data = FileManager.default.contents(atPath: url.path) else {
      throw ImageFileError.unreadable(path: url.path, reason: "cannot be opened")
    }
    return try decode([UInt8](data), path: url.path)
  }

  /// Decodes PNG or JPEG bytes; `path` names the source in errors.
  public static func decode(_ bytes: [UInt8], path: String) throws -> RGBImage {
    let kind = format(of: bytes)
    guard kind == "PNG" || kind == "JPEG" else { throw ImageFileError.unsupportedFormat(path: path, what: kind) }
    var image = mc_image()
    var message = [CChar](repeating: 0, count: 256)
    let status = bytes.withUnsafeBufferPointer { buffer in
      kind == "PNG"
        ? mc_png_decode(buffer.baseAddress, buffer.count, maximumPixels, &image, &message, message.count)
        : mc_jpeg_decode(buffer.baseAddress, buffer.count, maximumPixels, &image, &message, message.count)
    }
    defer { mc_image_free(&image) }
    let detail = String(cString: message)
    switch status {
    case 0: break
    case 2: throw ImageFileError.tooLarge(path: path, detail: detail)
    default: throw ImageFileError.corrupt(path: path, detail: "\(kind): \(detail)")
    }
    let width = Int(image.width)
    let height = Int(image.height)
    let pixels = Array(UnsafeBufferPointer(start: image.rgb, count: width * height * 3))
    let orientation = (kind == "JPEG" ? ExifReader.jpegOrientation(bytes) : ExifReader.pngOrientation(bytes)) ?? .up
    return RGBImage(width: width, height: height, pixels: pixels).oriented(orientation)
  }

  /// `PNG`, `JPEG`, or a short description of other content.
  static func format(of bytes: [UInt8]) -> String {
    if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "PNG" }
    if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "JPEG" }
    if bytes.starts(with: Array("GIF8".utf8)) { return "a GIF image" }
    if bytes.starts(with: Array("RIFF".utf8)) && bytes.count >= 12 && Array(bytes[8..<12]) == Array("WEBP".utf8) {
      return "a WebP image"
    }
    if bytes.count >= 12 && Array(bytes[4..<8]) == Array("ftyp".utf8) { return "a HEIF/HEIC image" }
    if bytes.starts(with: [0x42, 0x4D]) { return "a BMP image" }
    if bytes.starts(with: [0x49, 0x49, 0x2A, 0x00]) || bytes.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) {
      return "a TIFF image"
    }
    if bytes.isEmpty { return "an empty file" }
    return "this file"
  }

  /// Encodes an image as PNG bytes (for reports).
  public static func pngData(_ image: RGBImage) -> [UInt8]? {
    var output: UnsafeMutablePointer<UInt8>?
    var size = 0
    let status = image.pixels.withUnsafeBufferPointer {
      mc_png_encode_rgb($0.baseAddress, UInt32(image.width), UInt32(image.height), &output, &size)
    }
    guard status == 0, let output else { return nil }
    defer { free(output) }
    return Array(UnsafeBufferPointer(start: output, count: size))
  }
}
