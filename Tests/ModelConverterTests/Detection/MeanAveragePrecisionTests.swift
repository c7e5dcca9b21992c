import Foundation
import ModelConverter
import ReferenceRuntime
import Testing

/// mAP on cases small enough to compute by hand, from the definitions of pycocotools' COCOeval and
/// Ultralytics' `ap_per_class` (the expected values are worked out in the comments).
@Suite struct MeanAveragePrecisionTests {
  static func box(_ x: Double, _ y: Double, _ w: Double, _ h: Double) -> NonMaximumSuppression.Box {
    .init(x: x, y: y, width: w, height: h)
  }

  /// One class; photo 1 has object g1 and two detections of it (0.9 exactly on it, 0.8 a duplicate
  /// overlapping it by IoU 0.6); photo 2 has objects g2 and g3 and one detection, 0.7, exactly on g2.
  /// Ranked: TP, FP, TP of 3 objects at every IoU threshold (the duplicate's object is taken):
  /// recall 1/3, 1/3, 2/3; precision 1, 1/2, 2/3; envelope 1, 2/3, 2/3.
  static let images: [(objects: [LabelledObject], detections: [Detection])] = [
    (
      [LabelledObject(classIndex: 0, box: box(0.5, 0.5, 0.2, 0.2))],
      [
        Detection(classIndex: 0, confidence: 0.9, box: box(0.5, 0.5, 0.2, 0.2)),
        // Shifted right by w/4: intersection 0.15 x 0.2, union 0.25 x 0.2: IoU 0.6.
        Detection(classIndex: 0, confidence: 0.8, box: box(0.55, 0.5, 0.2, 0.2)),
      ]
    ),
    (
      [
        LabelledObject(classIndex: 0, box: box(0.3, 0.3, 0.2, 0.2)),
        LabelledObject(classIndex: 0, box: box(0.7, 0.7, 0.2, 0.2)),
      ],
      [Detection(classIndex: 0, confidence: 0.7, box: box(0.3, 0.3, 0.2, 0.2))]
    ),
  ]

  @Test func cocoReadsTheEnvelopeAt101Recalls() {
    // Recalls 0 ... 0.33 (34 levels) reach rank 1: precision 1; 0.34 ... 0.66 (33 levels) reach rank 3:
    // 2/3; 0.67 ... 1 are never reached: 0. AP = (34 + 33 * 2/3) / 101 = 56/101 at every threshold.
    let metrics = MeanAveragePrecision(images: Self.images, method: .coco)
    #expect(abs(metrics.map50 - 56.0 / 101) < 1e-12)
    #expect(abs(metrics.map50to95 - 56.0 / 101) < 1e-12)
    let row = metrics.classes[0]
    #expect(row.instances == 3 && row.detections == 3)
    #expect(row.precision == 2.0 / 3 && row.recall == 2.0 / 3)
  }

  @Test func ultralyticsIntegratesTheInterpolatedEnvelope() {
    // Curve (0, 1), (1/3, 1), (1/3, 2/3), (2/3, 2/3), then Ultralytics 8.4's sentinels (2/3, 0), (1, 0),
    // after the envelope. At x = i/100: 1 for i <= 33, 2/3 for 34 ... 66, 0 for 67 ... 100. Trapezoids:
    // 33 * 0.01 + (1 + 2/3) / 2 * 0.01 + 32 * 0.01 * 2/3 + (2/3 + 0) / 2 * 0.01
    // = 0.33 + 0.0083333... + 0.2133333... + 0.0033333... = 0.555.
    let metrics = MeanAveragePrecision(images: Self.images, method: .ultralytics)
    #expect(abs(metrics.map50 - 0.555) < 1e-9)
    #expect(abs(metrics.map50to95 - 0.555) < 1e-9)
  }

  @Test func perfectDetectionsScoreOneAsCOCOAnd0995AsUltralytics() {
    let images: [(objects: [LabelledObject], detections: [Detection])] = [
      (
        [LabelledObject(classIndex: 1, box: Self.box(0.4, 0.4, 0.3, 0.2))],
        [Detection(classIndex: 1, confidence: 0.5, box: Self.box(0.4, 0.4, 0.3, 0.2))]
      )
    ]
    // (pycocotools' precision is tp / (tp + fp + 2^-52).)
    #expect(abs(MeanAveragePrecision(images: images, method: .coco).map50to95 - 1) < 1e-12)
    // The last trapezoid runs from precision 1 at recall 0.99 to 0 at recall 1 (numpy's interp returns
    // the last point's value at x = 1): 1 - 0.005.
    #expect(abs(MeanAveragePrecision(images: images, method: .ultralytics).map50to95 - 0.995) < 1e-12)
  }

  @Test func theThresholdsSeparateLooseBoxes() {
    // A detection shifted by a fifth of its width overlaps its object by 0.16 x 0.2 of a union of
    // 0.08 - 0.032: IoU 2/3, a match at 0.50 ... 0.65 (IoU >= t): AP 1 at those four thresholds, 0 at the
    // six others (COCO).
    let images: [(objects: [LabelledObject], detections: [Detection])] = [
      (
        [LabelledObject(classIndex: 0, box: Self.box(0.5, 0.5, 0.2, 0.2))],
        [Detection(classIndex: 0, confidence: 0.9, box: Self.box(0.54, 0.5, 0.2, 0.2))]
      )
    ]
    let metrics = MeanAveragePrecision(images: images, method: .coco)
    #expect(
      metrics.classes[0].averagePrecisions.map { $0 > 0.99 } == Array(repeating: true, count: 4)
        + Array(repeating: false, count: 6))
    #expect(abs(metrics.map50to95 - 0.4) < 1e-12)
  }

  @Test func classesWithoutObjectsAreLeftOutAndMissedClassesScoreZero() {
    // Class 0 found perfectly, class 1 labelled but never detected (AP 0), class 2 only detected (no
    // objects: not in the mean). COCO: mean of 1 and 0.
    let images: [(objects: [LabelledObject], detections: [Detection])] = [
      (
        [
          LabelledObject(classIndex: 0, box: Self.box(0.2, 0.2, 0.1, 0.1)),
          LabelledObject(classIndex: 1, box: Self.box(0.7, 0.7, 0.1, 0.1)),
        ],
        [
          Detection(classIndex: 0, confidence: 0.9, box: Self.box(0.2, 0.2, 0.1, 0.1)),
          Detection(classIndex: 2, confidence: 0.8, box: Self.box(0.7, 0.7, 0.1, 0.1)),
        ]
      )
    ]
    let metrics = MeanAveragePrecision(images: images, method: .coco)
    #expect(abs(metrics.map50 - 0.5) < 1e-12)
    #expect(metrics.classes.map(\.classIndex) == [0, 1, 2])
    #expect(metrics.classes[1].ap50 == 0 && metrics.classes[1].recall == 0 && metrics.classes[1].precision == nil)
    #expect(metrics.classes[2].instances == 0 && metrics.classes[2].recall == nil)
  }

  @Test func aDetectionOfAnotherClassMatchesNothing() {
    let images: [(objects: [LabelledObject], detections: [Detection])] = [
      (
        [LabelledObject(classIndex: 0, box: Self.box(0.5, 0.5, 0.2, 0.2))],
        [Detection(classIndex: 1, confidence: 0.9, box: Self.box(0.5, 0.5, 0.2, 0.2))]
      )
    ]
    for method in AveragePrecisionMethod.allCases {
      #expect(MeanAveragePrecision(images: images, method: method).map50 == 0)
    }
  }
}
