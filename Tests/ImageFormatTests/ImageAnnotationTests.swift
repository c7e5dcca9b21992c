import ImageFormat
import Testing

/// Boxes and labels drawn by `predict --annotate`: the outline in the class's colour on the box's edge
/// pixels, the label tag above it, nothing else touched, and boxes outside the photo clipped.
@Suite struct ImageAnnotationTests {
  static let gray: (UInt8, UInt8, UInt8) = (128, 128, 128)

  static func blank(_ width: Int, _ height: Int) -> RGBImage {
    RGBImage(width: width, height: height, pixels: [UInt8](repeating: 128, count: width * height * 3))
  }

  static func isColor(_ pixel: (UInt8, UInt8, UInt8), _ color: (UInt8, UInt8, UInt8)) -> Bool {
    pixel.0 == color.0 && pixel.1 == color.1 && pixel.2 == color.2
  }

  @Test func outlinesTheBoxAndTagsItAbove() {
    // 100 x 100: outline 1 pixel, font scale 1 (a 7-pixel line of text with 1 pixel of padding).
    let box = ImageAnnotation.Box(left: 20, top: 30, width: 40, height: 50, label: "A", colorIndex: 1)
    let image = ImageAnnotation.annotate(Self.blank(100, 100), boxes: [box])
    let color = ImageAnnotation.palette[1]
    for x in 20..<60 {
      #expect(Self.isColor(image[x, 30], color))
      #expect(Self.isColor(image[x, 79], color))
    }
    for y in 30..<80 {
      #expect(Self.isColor(image[20, y], color))
      #expect(Self.isColor(image[59, y], color))
    }
    // Inside and outside the outline: untouched.
    #expect(Self.isColor(image[40, 55], Self.gray))
    #expect(Self.isColor(image[61, 55], Self.gray))
    #expect(Self.isColor(image[40, 81], Self.gray))
    // The tag (9 pixels high, 5 + 2 wide) sits on the box's top edge, its text in white on this dark blue.
    #expect(Self.isColor(image[20, 21], color))
    #expect(Self.isColor(image[26, 29], color))
    #expect(Self.isColor(image[27, 25], Self.gray))
    #expect(Self.isColor(image[20, 20], Self.gray))
    // 'A': its top row is .###. : pixels 2-4 of the glyph, at x = 21 + 1 ... 21 + 3, y = 22.
    #expect(Self.isColor(image[21, 22], color))
    #expect(Self.isColor(image[22, 22], (255, 255, 255)))
    #expect(Self.isColor(image[24, 22], (255, 255, 255)))
    #expect(Self.isColor(image[25, 22], color))
  }

  @Test func aBoxAtTheTopCarriesItsTagInside() {
    let box = ImageAnnotation.Box(left: 10, top: 0, width: 30, height: 30, label: "B", colorIndex: 0)
    let image = ImageAnnotation.annotate(Self.blank(64, 64), boxes: [box])
    // The tag fills rows 0 ... 8 from the box's left edge.
    #expect(Self.isColor(image[11, 8], ImageAnnotation.palette[0]))
    #expect(Self.isColor(image[11, 9], Self.gray))
  }

  @Test func boxesOutsideThePhotoAreClippedAndNonFiniteOnesSkipped() {
    // Wholly outside (its tag too), not finite, or far larger than the photo with every edge outside:
    // nothing drawn, nothing out of bounds.
    let invisible = [
      ImageAnnotation.Box(left: -50, top: -50, width: 1e300, height: 1e300, label: "huge", colorIndex: -7),
      ImageAnnotation.Box(left: .nan, top: 1, width: 2, height: 2, label: "nan", colorIndex: 3),
      ImageAnnotation.Box(left: 100, top: 100, width: 5, height: 5, label: "outside", colorIndex: 2),
    ]
    #expect(ImageAnnotation.annotate(Self.blank(16, 12), boxes: invisible) == Self.blank(16, 12))
    // Half outside on the left: its right and bottom edges show, clipped at x = 0; no label.
    let half = ImageAnnotation.Box(left: -10, top: 2, width: 20, height: 6, label: "", colorIndex: 4)
    let image = ImageAnnotation.annotate(Self.blank(16, 12), boxes: [half])
    let color = ImageAnnotation.palette[4]
    #expect((2..<8).allSatisfy { Self.isColor(image[9, $0], color) })
    #expect((0..<10).allSatisfy { Self.isColor(image[$0, 2], color) && Self.isColor(image[$0, 7], color) })
    #expect(Self.isColor(image[5, 5], Self.gray) && Self.isColor(image[10, 5], Self.gray))
  }
}
