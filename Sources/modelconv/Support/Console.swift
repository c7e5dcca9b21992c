import Foundation

/// Where the command prints: results to stdout, diagnostics to stderr.
enum Console {
  static func out(_ text: String) { print(text) }

  static func error(_ text: String) {
    FileHandle.standardError.write(Data(("modelconv: error: " + text + "\n").utf8))
  }

  static func warning(_ text: String) {
    FileHandle.standardError.write(Data(("modelconv: warning: " + text + "\n").utf8))
  }
}
