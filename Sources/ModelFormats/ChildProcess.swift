import Dispatch
import Foundation

/// A child process started with posix_spawn and waited for with waitid/waitpid: Foundation's `Process`
/// on Linux crashed when several threads started and waited for processes at once (the reader isolation,
/// `modelconv build`'s workers and the CLI tests all run children concurrently). Only stdin, stdout and
/// stderr reach the child.
package enum ChildProcess {
  package enum Status: Equatable {
    case exited(Int32)
    case signaled(Int32)
    case timedOut
  }

  /// Runs `executable` with `arguments` (argv[0] included) and `environment`; stdin is /dev/null, stdout
  /// and stderr go to the given files (created or truncated) or /dev/null. Past `timeout` seconds the
  /// child is killed. Throws the spawn error's text when it cannot start.
  package static func run(
    _ executable: String, arguments: [String], environment: [String: String], stdout: String? = nil,
    stderr: String? = nil,
    timeout: Double? = nil
  ) throws -> Status {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    for (fd, path) in [(Int32(1), stdout), (Int32(2), stderr)] {
      posix_spawn_file_actions_addopen(
        &actions, fd, path ?? "/dev/null", path == nil ? O_WRONLY : O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    }
    // Nothing else is inherited: libhdf5 opens files without O_CLOEXEC, and a child holding a copy of a
    // descriptor keeps that file's flock, so another process could not open the file until it exited.
    closeInherited(&actions)
    var pid: pid_t = 0
    let argv = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in envp { free(pointer) } }
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
    guard spawned == 0 else {
      throw SpawnError(description: "cannot start \(executable) (\(String(cString: strerror(spawned))))")
    }
    var timedOut = false
    if let timeout {
      // A thread waits for the child to end without reaping it (WNOWAIT), so its end is seen at once and
      // its pid cannot be reused before this thread has decided whether to kill it.
      let ended = DispatchSemaphore(value: 0)
      Thread.detachNewThread { [pid] in
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        ended.signal()
      }
      timedOut = ended.wait(timeout: .now() + timeout) == .timedOut
      if timedOut {
        kill(pid, SIGKILL)
        ended.wait()
      }
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
      if errno != EINTR { return .exited(-1) }
    }
    if timedOut { return .timedOut }
    // WIFEXITED / WTERMSIG are macros; decode the status word by hand.
    if status & 0x7F == 0 { return .exited((status >> 8) & 0xFF) }
    return .signaled(status & 0x7F)
  }

  /// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np` (not in the headers Swift imports), found at
  /// run time; else every descriptor open now (`/proc/self/fd`) is closed in the child.
  private static let addCloseFrom:
    (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
      guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
      else { return nil }
      return unsafeBitCast(
        symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

  private static func closeInherited(_ actions: inout posix_spawn_file_actions_t) {
    if let addCloseFrom, addCloseFrom(&actions, 3) == 0 { return }
    // glibc ignores a close action on a descriptor that is no longer open (only out-of-range ones fail).
    for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
      if let fd = Int32(name), fd > 2 { posix_spawn_file_actions_addclose(&actions, fd) }
    }
  }

  package struct SpawnError: Error, CustomStringConvertible {
    package var description: String
  }
}
