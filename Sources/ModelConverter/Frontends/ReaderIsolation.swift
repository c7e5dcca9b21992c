import Foundation
import KerasFormat

/// Reading untrusted files in a child process: the frontends whose reader libraries may crash or hang
/// on a hostile file (the Keras reader's libhdf5) read it in a copy of this executable under CPU,
/// memory and time limits, so a bad file becomes an error instead of taking the tool down. A tool
/// opts in once at start-up; the child is the same executable started with `childCommand`.
public enum ReaderIsolation {
  /// The hidden first argument that makes the executable a reader child.
  public static var childCommand: String { KerasReaderIsolation.childCommand }

  /// The child's whole life: reads what the arguments ask and exits with its status.
  public static func childMain(_ arguments: [String]) -> Int32 { KerasReaderIsolation.childMain(arguments) }

  /// From now on every isolating frontend reads its files in children of this process' executable.
  public static func isolateInChildProcesses() { KerasModelFile.isolation = KerasReaderIsolation.selfExecutable() }

  /// This process' executable, resolved (what a tool re-runs for its own work, as `build` does).
  public static var selfExecutable: String { KerasReaderIsolation.selfExecutable().executable }
}
