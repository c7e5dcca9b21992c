/// Finds the orientation tag in EXIF data, reading every offset against the bytes it has.
enum ExifReader {
  /// The orientation in a JPEG's APP1 `Exif` segment, if any.
  static func jpegOrientation(_ bytes: [UInt8]) -> ExifOrientation? {
    var offset = 2
    while offset + 4 <= bytes.count, bytes[offset] == 0xFF {
      let marker = bytes[offset + 1]
      // Start of scan or end of image: no more metadata segments.
      if marker == 0xDA || marker == 0xD9 { return nil }
      let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
      guard length >= 2, offset + 2 + length <= bytes.count else { return nil }
      let body = offset + 4
      if marker == 0xE1, length >= 8, Array(bytes[body..<body + 6]) == [0x45, 0x78, 0x69, 0x66, 0, 0] {
        return tiffOrientation(Array(bytes[body + 6..<offset + 2 + length]))
      }
      offset += 2 + length
    }
    return nil
  }

  /// The orientation in a PNG's `eXIf` chunk, if any (chunks before the image data).
  static func pngOrientation(_ bytes: [UInt8]) -> ExifOrientation? {
    var offset = 8
    while offset + 8 <= bytes.count {
      let length =
        Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
      let type = Array(bytes[offset + 4..<offset + 8])
      guard length >= 0, length <= bytes.count - offset - 8 else { return nil }
      if type == Array("eXIf".utf8) { return tiffOrientation(Array(bytes[offset + 8..<offset + 8 + length])) }
      if type == Array("IDAT".utf8) || type == Array("IEND".utf8) { return nil }
      offset += 12 + length
    }
    return nil
  }

  /// Tag 0x0112 of IFD0 in a TIFF structure (`II*\0` little-endian or `MM\0*` big-endian).
  static func tiffOrientation(_ tiff: [UInt8]) -> ExifOrientation? {
    guard tiff.count >= 8 else { return nil }
    let little: Bool
    switch (tiff[0], tiff[1]) {
    case (0x49, 0x49): little = true
    case (0x4D, 0x4D): little = false
    default: return nil
    }
    func u16(_ o: Int) -> Int? {
      guard o >= 0, o + 2 <= tiff.count else { return nil }
      return little ? Int(tiff[o]) | Int(tiff[o + 1]) << 8 : Int(tiff[o]) << 8 | Int(tiff[o + 1])
    }
    func u32(_ o: Int) -> Int? {
      guard let a = u16(o), let b = u16(o + 2) else { return nil }
      return little ? a | b << 16 : a << 16 | b
    }
    guard let ifd = u32(4), let count = u16(ifd) else { return nil }
    for entry in 0..<count {
      let at = ifd + 2 + entry * 12
      guard let tag = u16(at) else { return nil }
      if tag == 0x0112 {
        guard let type = u16(at + 2), type == 3, let value = u16(at + 8) else { return nil }
        return ExifOrientation(rawValue: value)
      }
    }
    return nil
  }
}
