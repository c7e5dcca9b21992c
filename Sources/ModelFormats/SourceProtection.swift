import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Keeps every command from writing over what it reads: an output path that is, lies inside, or
/// contains a file or folder a source was read from (the model, an `.mlpackage` folder and all inside
/// it, external-data files, labels, an architecture file) is refused before anything is written.
/// Paths are compared as real paths (symbolic links, `.` and `..` resolved, also for an output that
/// does not exist yet) and, for existing files, by device and inode (hard links).
public enum SourceProtection {
  /// An output that would replace or write into something a source was read from (a usage error).
  public struct Conflict: KindedError, Equatable, CustomStringConvertible, LocalizedError {
    public var output: String
    public var source: String
    /// "is", "is a hard link to", "lies inside" or "contains".
    public var relation: String
    public var kind: ErrorKind { .usage }
    public var description: String {
      "the output \(output) \(relation) the input \(source), which is read; writing there would destroy it: choose another output path"
    }
    public var errorDescription: String? { description }
  }

  /// The real path of `path`, whether or not it exists: the deepest existing ancestor resolved by
  /// `realpath`, with the rest appended (`.` dropped, `..` applied).
  public static func resolved(_ path: String) -> String {
    let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    if let real = realPath(absolute) { return real }
    var components: [String] = []
    for part in absolute.split(separator: "/", omittingEmptySubsequences: true) {
      if part == "." { continue }
      if part == ".." {
        if !components.isEmpty { components.removeLast() }
        continue
      }
      components.append(String(part))
    }
    // Walk up until an existing ancestor resolves; resolve it, append the rest.
    var rest: [String] = []
    while true {
      let candidate = "/" + components.joined(separator: "/")
      if let real = realPath(candidate) {
        if rest.isEmpty { return real }
        let joined = rest.reversed().joined(separator: "/")
        return real == "/" ? "/" + joined : real + "/" + joined
      }
      guard let last = components.popLast() else { return "/" + rest.reversed().joined(separator: "/") }
      rest.append(last)
    }
  }

  /// The first source that `output` is, lies inside, or contains; nil when it touches none.
  public static func conflict(output: String, sources: [String]) -> Conflict? {
    let target = resolved(output)
    let targetNode = node(target)
    for source in sources {
      let real = resolved(source)
      if real == target { return Conflict(output: output, source: source, relation: "is") }
      if target.hasPrefix(real == "/" ? "/" : real + "/") {
        return Conflict(output: output, source: source, relation: "lies inside")
      }
      if real.hasPrefix(target == "/" ? "/" : target + "/") {
        return Conflict(output: output, source: source, relation: "contains")
      }
      if let targetNode, let sourceNode = node(real), targetNode == sourceNode {
        return Conflict(output: output, source: source, relation: "is a hard link to")
      }
    }
    return nil
  }

  /// Throws `Conflict` when `output` touches any of `sources`.
  public static func check(output: String, sources: [String]) throws {
    if let conflict = conflict(output: output, sources: sources) { throw conflict }
  }

  private static func node(_ path: String) -> [UInt64]? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return [UInt64(info.st_dev), UInt64(info.st_ino)]
  }

  private static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }
}
