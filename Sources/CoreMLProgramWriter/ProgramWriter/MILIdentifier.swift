import CoreMLCommon

/// MIL's identifier rule ([rule MIL-IDENT] in Schemas/MIL.proto): a letter or underscore, then letters,
/// digits, underscores or '@'. Shared by the ML Program writer (and usable by the reader).
public enum MILIdentifier {
  /// Whether `name` is a valid MIL identifier.
  public static func isValid(_ name: String) -> Bool {
    guard let first = name.unicodeScalars.first, isStart(first) else { return false }
    return name.unicodeScalars.allSatisfy { isStart($0) || ("0"..."9").contains($0) || $0 == "@" }
  }

  /// `name` with every character outside the identifier alphabet replaced by `_`, prefixed with `_`
  /// when it does not start with a letter or underscore. Different names can sanitize alike: callers
  /// that need unique names make them unique afterwards.
  public static func sanitize(_ name: String) -> String {
    var scalars = String.UnicodeScalarView()
    for scalar in name.unicodeScalars {
      let allowed = isStart(scalar) || ("0"..."9").contains(scalar) || scalar == "@"
      scalars.append(allowed ? scalar : "_")
    }
    var result = String(scalars)
    if let first = result.unicodeScalars.first, isStart(first) { return result }
    result = "_" + result
    return result
  }

  private static func isStart(_ scalar: Unicode.Scalar) -> Bool {
    ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
  }
}
