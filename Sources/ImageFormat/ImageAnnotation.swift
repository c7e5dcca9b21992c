/// Boxes and labels drawn onto a photo (what `predict --annotate` writes): each box an outline in its
/// class's colour, its label on a filled tag above it (inside the box when the box touches the top),
/// text in a 5x7 bitmap font scaled with the photo. Everything is clipped to the image.
public enum ImageAnnotation {
  /// A box to draw, in the image's pixels.
  public struct Box: Sendable, Equatable {
    public var left: Double
    public var top: Double
    public var width: Double
    public var height: Double
    public var label: String
    /// Picks the colour (boxes of one class share one).
    public var colorIndex: Int

    public init(left: Double, top: Double, width: Double, height: Double, label: String, colorIndex: Int) {
      self.left = left
      self.top = top
      self.width = width
      self.height = height
      self.label = label
      self.colorIndex = colorIndex
    }
  }

  /// Distinct saturated colours, one per class index (repeating after the last).
  public static let palette: [(UInt8, UInt8, UInt8)] = [
    (255, 56, 56), (56, 120, 255), (40, 200, 80), (255, 170, 20), (190, 60, 230), (0, 200, 210),
    (255, 90, 190), (130, 200, 30), (120, 80, 40), (90, 90, 255), (255, 120, 90), (20, 130, 120),
  ]

  /// The photo with the boxes drawn, in order (later boxes over earlier ones).
  public static func annotate(_ image: RGBImage, boxes: [Box]) -> RGBImage {
    var canvas = image
    let short = min(image.width, image.height)
    let thickness = max(1, short / 200)
    let scale = max(1, short / 320)
    for box in boxes {
      let color = palette[((box.colorIndex % palette.count) + palette.count) % palette.count]
      // NaN or infinite coordinates draw nothing.
      guard box.left.isFinite, box.top.isFinite, box.width.isFinite, box.height.isFinite else { continue }
      let left = clampedPixel(box.left)
      let top = clampedPixel(box.top)
      let right = clampedPixel(box.left + box.width)
      let bottom = clampedPixel(box.top + box.height)
      for t in 0..<thickness {
        canvas.fill(left: left, top: top + t, right: right, bottom: top + t + 1, color: color)
        canvas.fill(left: left, top: bottom - 1 - t, right: right, bottom: bottom - t, color: color)
        canvas.fill(left: left + t, top: top, right: left + t + 1, bottom: bottom, color: color)
        canvas.fill(left: right - 1 - t, top: top, right: right - t, bottom: bottom, color: color)
      }
      guard !box.label.isEmpty else { continue }
      let (textWidth, textHeight) = BitmapFont.size(of: box.label, scale: scale)
      let padding = scale
      let tagHeight = textHeight + 2 * padding
      let tagTop = top - tagHeight >= 0 ? top - tagHeight : top
      canvas.fill(
        left: left, top: tagTop, right: left + textWidth + 2 * padding, bottom: tagTop + tagHeight, color: color)
      // Dark text on light tags, white on dark (BT.601 luma).
      let luma = 299 * Int(color.0) + 587 * Int(color.1) + 114 * Int(color.2)
      let ink: (UInt8, UInt8, UInt8) = luma > 150_000 ? (0, 0, 0) : (255, 255, 255)
      canvas.draw(box.label, x: left + padding, y: tagTop + padding, scale: scale, color: ink)
    }
    return canvas
  }

  /// A coordinate as a whole pixel, bounded so that later arithmetic cannot overflow.
  static func clampedPixel(_ value: Double) -> Int {
    Int(min(max(value.rounded(), -1_000_000), 1_000_000))
  }
}

extension RGBImage {
  /// Paints the pixels with `left <= x < right`, `top <= y < bottom`, clipped to the image.
  mutating func fill(left: Int, top: Int, right: Int, bottom: Int, color: (UInt8, UInt8, UInt8)) {
    let x0 = max(0, left)
    let x1 = min(width, right)
    let y0 = max(0, top)
    let y1 = min(height, bottom)
    guard x0 < x1, y0 < y1 else { return }
    for y in y0..<y1 {
      for x in x0..<x1 {
        let i = (y * width + x) * 3
        pixels[i] = color.0
        pixels[i + 1] = color.1
        pixels[i + 2] = color.2
      }
    }
  }

  /// Writes `text` with its top left corner at (x, y), each font pixel a `scale` x `scale` square.
  mutating func draw(_ text: String, x: Int, y: Int, scale: Int, color: (UInt8, UInt8, UInt8)) {
    var cursor = x
    for character in text {
      let glyph = BitmapFont.glyph(character)
      for (row, bits) in glyph.enumerated() {
        for column in 0..<BitmapFont.width where bits & (1 << (BitmapFont.width - 1 - column)) != 0 {
          fill(
            left: cursor + column * scale, top: y + row * scale, right: cursor + (column + 1) * scale,
            bottom: y + (row + 1) * scale, color: color)
        }
      }
      cursor += (BitmapFont.width + 1) * scale
      if cursor >= width { return }
    }
  }
}

/// A 5x7 pixel font for labels: capital letters (lower case is drawn in capitals), digits and the
/// punctuation of labels and percentages; any other character is drawn as `?`.
enum BitmapFont {
  static let width = 5
  static let height = 7

  /// The space `text` takes: characters 6 font pixels apart, 7 high.
  static func size(of text: String, scale: Int) -> (width: Int, height: Int) {
    let count = text.count
    return (max(0, count * (width + 1) - 1) * scale, height * scale)
  }

  /// Seven rows, the leftmost column the highest of five bits.
  static func glyph(_ character: Character) -> [UInt8] {
    let key = Character(character.uppercased().count == 1 ? character.uppercased() : String(character))
    return glyphs[key] ?? glyphs["?"] ?? []
  }

  static let glyphs: [Character: [UInt8]] = {
    var table: [Character: [UInt8]] = [:]
    for (character, rows) in drawings {
      table[character] = rows.split(separator: " ").map { row in
        row.reduce(UInt8(0)) { bits, pixel in (bits << 1) | (pixel == "#" ? 1 : 0) }
      }
    }
    return table
  }()

  // Each glyph as seven rows of five pixels ('#' ink, '.' none), top to bottom.
  static let drawings: [(Character, String)] = [
    ("A", ".###. #...# #...# ##### #...# #...# #...#"), ("B", "####. #...# #...# ####. #...# #...# ####."),
    ("C", ".###. #...# #.... #.... #.... #...# .###."), ("D", "####. #...# #...# #...# #...# #...# ####."),
    ("E", "##### #.... #.... ####. #.... #.... #####"), ("F", "##### #.... #.... ####. #.... #.... #...."),
    ("G", ".###. #...# #.... #.### #...# #...# .####"), ("H", "#...# #...# #...# ##### #...# #...# #...#"),
    ("I", ".###. ..#.. ..#.. ..#.. ..#.. ..#.. .###."), ("J", "..### ...#. ...#. ...#. ...#. #..#. .##.."),
    ("K", "#...# #..#. #.#.. ##... #.#.. #..#. #...#"), ("L", "#.... #.... #.... #.... #.... #.... #####"),
    ("M", "#...# ##.## #.#.# #.#.# #...# #...# #...#"), ("N", "#...# #...# ##..# #.#.# #..## #...# #...#"),
    ("O", ".###. #...# #...# #...# #...# #...# .###."), ("P", "####. #...# #...# ####. #.... #.... #...."),
    ("Q", ".###. #...# #...# #...# #.#.# #..#. .##.#"), ("R", "####. #...# #...# ####. #.#.. #..#. #...#"),
    ("S", ".#### #.... #.... .###. ....# ....# ####."), ("T", "##### ..#.. ..#.. ..#.. ..#.. ..#.. ..#.."),
    ("U", "#...# #...# #...# #...# #...# #...# .###."), ("V", "#...# #...# #...# #...# #...# .#.#. ..#.."),
    ("W", "#...# #...# #...# #.#.# #.#.# #.#.# .#.#."), ("X", "#...# #...# .#.#. ..#.. .#.#. #...# #...#"),
    ("Y", "#...# #...# .#.#. ..#.. ..#.. ..#.. ..#.."), ("Z", "##### ....# ...#. ..#.. .#... #.... #####"),
    ("0", ".###. #...# #..## #.#.# ##..# #...# .###."), ("1", "..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###."),
    ("2", ".###. #...# ....# ...#. ..#.. .#... #####"), ("3", "##### ...#. ..#.. ...#. ....# #...# .###."),
    ("4", "...#. ..##. .#.#. #..#. ##### ...#. ...#."), ("5", "##### #.... ####. ....# ....# #...# .###."),
    ("6", "..##. .#... #.... ####. #...# #...# .###."), ("7", "##### ....# ...#. ..#.. .#... .#... .#..."),
    ("8", ".###. #...# #...# .###. #...# #...# .###."), ("9", ".###. #...# #...# .#### ....# ...#. .##.."),
    (" ", "..... ..... ..... ..... ..... ..... ....."), (".", "..... ..... ..... ..... ..... .##.. .##.."),
    ("%", "##... ##..# ...#. ..#.. .#... #..## ...##"), ("-", "..... ..... ..... ##### ..... ..... ....."),
    ("_", "..... ..... ..... ..... ..... ..... #####"), (":", "..... .##.. .##.. ..... .##.. .##.. ....."),
    ("(", "...#. ..#.. .#... .#... .#... ..#.. ...#."), (")", ".#... ..#.. ...#. ...#. ...#. ..#.. .#..."),
    ("/", "..... ....# ...#. ..#.. .#... #.... ....."), ("?", ".###. #...# ....# ...#. ..#.. ..... ..#.."),
    (",", "..... ..... ..... ..... .##.. ..#.. .#..."), ("'", "..#.. ..#.. .#... ..... ..... ..... ....."),
  ]
}
