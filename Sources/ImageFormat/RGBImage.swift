/// An 8-bit RGB image, rows top to bottom, three bytes per pixel.
public struct RGBImage: Sendable, Equatable {
  public let width: Int
  public let height: Int
  /// `width * height * 3` bytes: R, G, B of each pixel, row by row.
  public var pixels: [UInt8]

  public init(width: Int, height: Int, pixels: [UInt8]) {
    precondition(
      width > 0 && height > 0 && pixels.count == width * height * 3,
      "RGB image of \(width)x\(height) needs \(width * height * 3) bytes")
    self.width = width
    self.height = height
    self.pixels = pixels
  }

  /// The red, green and blue values of pixel (x, y).
  public subscript(x: Int, y: Int) -> (UInt8, UInt8, UInt8) {
    let i = (y * width + x) * 3
    return (pixels[i], pixels[i + 1], pixels[i + 2])
  }

  /// The image as an EXIF orientation says it is displayed (orientation 1 is the stored image).
  public func oriented(_ orientation: ExifOrientation) -> RGBImage {
    guard orientation != .up else { return self }
    let swaps = orientation.swapsAxes
    let (w, h) = swaps ? (height, width) : (width, height)
    var result = [UInt8](repeating: 0, count: pixels.count)
    for y in 0..<h {
      for x in 0..<w {
        let (sx, sy) = orientation.sourcePixel(x: x, y: y, width: w, height: h)
        let from = (sy * width + sx) * 3
        let to = (y * w + x) * 3
        result[to] = pixels[from]
        result[to + 1] = pixels[from + 1]
        result[to + 2] = pixels[from + 2]
      }
    }
    return RGBImage(width: w, height: h, pixels: result)
  }
}

/// The TIFF/EXIF orientation tag (0x0112): how the stored pixels are turned for display.
public enum ExifOrientation: Int, Sendable, Equatable, CaseIterable {
  /// Stored as displayed.
  case up = 1
  case upMirrored = 2
  case down = 3
  case downMirrored = 4
  case leftMirrored = 5
  /// Stored turned 90° counter-clockwise; displayed turned 90° clockwise (a portrait phone photo).
  case right = 6
  case rightMirrored = 7
  case left = 8

  var swapsAxes: Bool { rawValue >= 5 }

  /// For displayed pixel (x, y) of a `width` x `height` displayed image, the stored pixel. Per the
  /// EXIF specification, value v says the stored row 0 / column 0 are the displayed: 1 top / left,
  /// 2 top / right, 3 bottom / right, 4 bottom / left, 5 left / top, 6 right / top, 7 right / bottom,
  /// 8 left / bottom.
  func sourcePixel(x: Int, y: Int, width: Int, height: Int) -> (Int, Int) {
    switch self {
    case .up: return (x, y)
    case .upMirrored: return (width - 1 - x, y)
    case .down: return (width - 1 - x, height - 1 - y)
    case .downMirrored: return (x, height - 1 - y)
    case .leftMirrored: return (y, x)
    case .right: return (y, width - 1 - x)
    case .rightMirrored: return (height - 1 - y, width - 1 - x)
    case .left: return (height - 1 - y, x)
    }
  }
}
