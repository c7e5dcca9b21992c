/// How a photo is fitted to a model's input size, as Vision's `VNImageCropAndScaleOption` does it.
public enum CropAndScale: String, Sendable, Equatable, CaseIterable, Codable {
  /// Scale keeping the aspect ratio until the shorter side fits, then cut the centre of the longer side.
  case centerCrop = "center"
  /// Scale keeping the aspect ratio until the longer side fits; the rest of the input is black.
  case scaleFit = "fit"
  /// Scale each side to fit, ignoring the aspect ratio.
  case scaleFill = "fill"
}

/// Resizing with a triangle (bilinear) filter widened by the reduction factor, so downscaling averages
/// every source pixel instead of skipping (the antialiased bilinear filter of Pillow's `resize`).
/// Pixel centres sit at half-integers; edges repeat the border pixel; results round to 8 bits.
public enum ImageScaling {
  /// The image fitted to `width` x `height`.
  public static func fit(_ image: RGBImage, width: Int, height: Int, option: CropAndScale) -> RGBImage {
    let (w, h) = (Double(image.width), Double(image.height))
    switch option {
    case .scaleFill:
      return resample(image, box: (0, 0, w, h), width: width, height: height)
    case .centerCrop:
      let scale = max(Double(width) / w, Double(height) / h)
      let (cropWidth, cropHeight) = (Double(width) / scale, Double(height) / scale)
      return resample(
        image, box: ((w - cropWidth) / 2, (h - cropHeight) / 2, cropWidth, cropHeight), width: width, height: height)
    case .scaleFit:
      let scale = min(Double(width) / w, Double(height) / h)
      let fittedWidth = min(width, max(1, Int((w * scale).rounded())))
      let fittedHeight = min(height, max(1, Int((h * scale).rounded())))
      let fitted = resample(image, box: (0, 0, w, h), width: fittedWidth, height: fittedHeight)
      var canvas = [UInt8](repeating: 0, count: width * height * 3)
      let (left, top) = ((width - fittedWidth) / 2, (height - fittedHeight) / 2)
      for y in 0..<fittedHeight {
        let from = y * fittedWidth * 3
        let to = ((top + y) * width + left) * 3
        canvas.replaceSubrange(to..<to + fittedWidth * 3, with: fitted.pixels[from..<from + fittedWidth * 3])
      }
      return RGBImage(width: width, height: height, pixels: canvas)
    }
  }

  /// The source region `box` (x, y, width, height in pixels) resampled to `width` x `height`.
  static func resample(
    _ image: RGBImage, box: (x: Double, y: Double, width: Double, height: Double), width: Int, height: Int
  ) -> RGBImage {
    let columns = weights(from: box.x, length: box.width, sourceSize: image.width, count: width)
    let rows = weights(from: box.y, length: box.height, sourceSize: image.height, count: height)
    // Horizontal pass into floats, then vertical pass, rounding once at the end.
    var horizontal = [Float](repeating: 0, count: width * image.height * 3)
    image.pixels.withUnsafeBufferPointer { source in
      for y in 0..<image.height {
        for (x, taps) in columns.enumerated() {
          var r: Float = 0
          var g: Float = 0
          var b: Float = 0
          for (index, weight) in taps {
            let i = (y * image.width + index) * 3
            r += weight * Float(source[i])
            g += weight * Float(source[i + 1])
            b += weight * Float(source[i + 2])
          }
          let o = (y * width + x) * 3
          horizontal[o] = r
          horizontal[o + 1] = g
          horizontal[o + 2] = b
        }
      }
    }
    var result = [UInt8](repeating: 0, count: width * height * 3)
    for (y, taps) in rows.enumerated() {
      for x in 0..<width {
        var sum: (Float, Float, Float) = (0, 0, 0)
        for (index, weight) in taps {
          let i = (index * width + x) * 3
          sum.0 += weight * horizontal[i]
          sum.1 += weight * horizontal[i + 1]
          sum.2 += weight * horizontal[i + 2]
        }
        let o = (y * width + x) * 3
        result[o] = clampByte(sum.0)
        result[o + 1] = clampByte(sum.1)
        result[o + 2] = clampByte(sum.2)
      }
    }
    return RGBImage(width: width, height: height, pixels: result)
  }

  /// For each output index, the source pixels and their normalised triangle-filter weights.
  static func weights(from start: Double, length: Double, sourceSize: Int, count: Int) -> [[(Int, Float)]] {
    let scale = length / Double(count)
    let support = max(1, scale)
    return (0..<count).map { i in
      let centre = start + (Double(i) + 0.5) * scale
      let low = max(0, Int((centre - support).rounded(.down)))
      let high = min(sourceSize - 1, Int((centre + support).rounded(.up)))
      var taps: [(Int, Double)] = []
      if low <= high {
        for j in low...high {
          let weight = max(0, 1 - abs((Double(j) + 0.5 - centre) / support))
          if weight > 0 { taps.append((j, weight)) }
        }
      }
      if taps.isEmpty { taps = [(min(sourceSize - 1, max(0, Int(centre))), 1)] }
      let total = taps.reduce(0) { $0 + $1.1 }
      return taps.map { ($0.0, Float($0.1 / total)) }
    }
  }

  static func clampByte(_ value: Float) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }

  /// ITU-R BT.601 luma, `0.299 R + 0.587 G + 0.114 B`, rounded: what a grayscale model input receives.
  public static func grayscale(_ image: RGBImage) -> [UInt8] {
    (0..<image.width * image.height).map { i in
      let p = i * 3
      return clampByte(
        0.299 * Float(image.pixels[p]) + 0.587 * Float(image.pixels[p + 1]) + 0.114 * Float(image.pixels[p + 2]))
    }
  }
}
