import Testing

@testable import ModelConverter

/// The float32 pass rule: every element within the element rule, or (float32 roundoff carried through a
/// deep graph) a few elements outside it while the tensor's relative RMS error stays within a few hundred unit
/// roundoffs of float32 (u = 2^-24, IEEE 754 binary32) at 256 u.
@Suite struct VerificationToleranceTests {
  static let rule = VerificationTolerance.float32
  static let u = 1.0 / 16_777_216

  /// `elements` values of RMS 1 (signal = elements), `misses` of them off by `error` each.
  static func passes(_ rule: VerificationTolerance = rule, elements: Int, misses: Int, error: Double) -> Bool {
    rule.passes(mismatches: misses, signal: Double(elements), noise: Double(misses) * error * error, elements: elements)
  }

  @Test func aNearZeroElementOffByRoundoffPasses() {
    // Swin V2 S's attention logits: 1 element in 786 432 off by 1.8e-5 where the element rule allows 1e-5.
    #expect(Self.passes(elements: 786_432, misses: 1, error: 1.8e-5))
    #expect(VerificationTolerance.float32RoundoffRMS == Float(256 * Self.u))
  }

  @Test func oneWrongElementStillFails() {
    // A wrong pad or corner pixel: one element off by the tensor's own size is a relative RMS error of
    // 1 / sqrt(N), above 256 u for any tensor below 4.2e9 elements.
    #expect(!Self.passes(elements: 1_000_000, misses: 1, error: 1))
    #expect(!Self.passes(elements: 100_000_000, misses: 1, error: 0.5))
  }

  @Test func errorsAboveTheRoundoffAllowanceFail() {
    let n = 1_000_000
    // Just inside and just outside 256 u of relative RMS error, with the misses allowed by share.
    let share = n / 10_000
    let inside = 255 * Self.u * Double(n).squareRoot() / Double(share).squareRoot()
    let outside = 257 * Self.u * Double(n).squareRoot() / Double(share).squareRoot()
    #expect(Self.passes(elements: n, misses: share, error: inside))
    #expect(!Self.passes(elements: n, misses: share, error: outside))
  }

  @Test func moreMissesThanTheShareFail() {
    let n = 1_000_000
    #expect(Self.passes(elements: n, misses: 100, error: 1e-9))
    #expect(!Self.passes(elements: n, misses: 101, error: 1e-9))
    // A small tensor may still have its one element.
    #expect(Self.passes(elements: 10, misses: 1, error: 1e-9))
    #expect(!Self.passes(elements: 10, misses: 2, error: 1e-9))
  }

  @Test func givenTolerancesAreTheElementRuleAsWritten() {
    var given = Self.rule
    given.basis = .given
    #expect(!Self.passes(given, elements: 786_432, misses: 1, error: 1.8e-5))
    #expect(Self.passes(given, elements: 786_432, misses: 0, error: 0))
  }
}
