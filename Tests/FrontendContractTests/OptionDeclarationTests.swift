import Testing

@testable import modelconv

/// The command line's options are declared once, in `Options`, listed by the commands from there, and
/// read back by declaration: a command cannot read an option it did not declare.
@Suite struct OptionDeclarationTests {
  @Test func noCommandSpellsAnOptionTwice() {
    for command in ModelConvCommand.commands {
      var seen: Set<String> = []
      for spelling in command.specs.flatMap(\.names) {
        #expect(seen.insert(spelling).inserted, "\(command.name) declares \(spelling) twice")
      }
    }
  }

  @Test func everyOptionIsDeclaredOnceAndUsed() {
    var owners: [String: String] = [:]
    for spec in Options.all {
      for name in spec.names {
        let previous = owners.updateValue(spec.key, forKey: name)
        #expect(previous == nil, "\(name) is a spelling of both \(previous ?? "") and \(spec.key) in Options")
      }
    }
    for spec in Options.all {
      #expect(
        ModelConvCommand.commands.contains { $0.specs.contains { $0.key == spec.key } },
        "Options.\(spec.key) is declared but no command takes it")
    }
  }

  /// Each command lists the declaration itself (only its heading may differ), never a spec of its own.
  @Test func everyCommandListsTheDeclarations() {
    for command in ModelConvCommand.commands {
      for spec in command.specs {
        let declared = Options.all.first { $0.key == spec.key }
        #expect(declared != nil, "\(command.name): \(spec.key) is not declared in Options")
        if let declared {
          #expect(
            declared.isSameDeclaration(as: spec),
            "\(command.name): \(spec.key) differs from its declaration in Options (names, value or help)")
        }
      }
    }
  }

  /// A command that takes any option of a shared group takes the whole group, in its order, under one
  /// heading, with the group's help texts.
  @Test func sharedGroupsAreListedWholeAndUnchanged() {
    var users: [String: [String]] = [:]
    for (name, group) in Options.groups {
      for command in ModelConvCommand.commands {
        let keys = command.specs.map(\.key)
        guard group.contains(where: { keys.contains($0.key) }) else { continue }
        users[name, default: []].append(command.name)
        guard let start = keys.firstIndex(of: group[0].key), start + group.count <= keys.count else {
          Issue.record("\(command.name) lists part of Options.\(name) without its first option \(group[0].key)")
          continue
        }
        let listed = Array(command.specs[start..<start + group.count])
        #expect(
          listed.map(\.key) == group.map(\.key),
          "\(command.name) lists Options.\(name) incompletely or out of order: \(listed.map(\.key))")
        #expect(
          zip(listed, group).allSatisfy { $0.isSameDeclaration(as: $1) },
          "\(command.name) lists Options.\(name) with other help")
        #expect(Set(listed.map(\.section)).count == 1, "\(command.name) splits Options.\(name) over several headings")
      }
    }
    // The groups this issue is about are indeed shared.
    #expect(users["names"] == ["convert", "verify"])
    #expect(users["shapes"] == ["convert", "verify", "inspect", "predict", "evaluate"])
    #expect(users["imagePreprocessing"] == ["convert", "verify", "predict", "evaluate"])
    #expect(users["labels"] == ["convert", "verify", "predict", "evaluate"])
    #expect(users["sampling"] == ["convert", "verify"])
  }

  /// A manifest key is a convert option: the schema's keys come from the same declarations.
  @Test func manifestKeysAreConvertsDeclarations() {
    let keys = BuildManifest.options.map(\.key)
    #expect(keys.contains("image-scale") && keys.contains("labels-file") && keys.contains("verify"))
    #expect(!keys.contains("output") && !keys.contains("json") && !keys.contains("help"))
    for (key, spec) in BuildManifest.options { #expect(spec.key == "--" + key) }
  }

  @Test func readsGoThroughTheDeclaration() throws {
    let parsed = try ParsedArguments(
      ["model.h5", "--json", "--input-shape", "x=1,2"], specs: InspectCommand.specs + [Options.help])
    #expect(parsed.isDeclared(Options.json) && parsed.isDeclared(Options.inputShape) && parsed.isDeclared(Options.help))
    #expect(!parsed.isDeclared(Options.imageScale))
    #expect(!parsed.isDeclared(Options.labelList))
    // The same declaration under another heading is still the one declared.
    #expect(parsed.isDeclared(Options.inputShape.inSection("ELSEWHERE")))
    // An option with a declared spelling but another declaration is not.
    var impostor = Options.json
    impostor.help = "Something else"
    #expect(!parsed.isDeclared(impostor))
    #expect(parsed.flag(Options.json))
    #expect(parsed.values(Options.inputShape) == ["x=1,2"])
    #expect(try parsed.inputShapes() == ["x": [1, 2]])
    #expect(parsed.positionals == ["model.h5"])
    // Spellings a user types that no option of the command has are refused, never read.
    #expect(throws: UsageError.self) { try ParsedArguments(["--image-scale", "2"], specs: InspectCommand.specs) }
  }

  @Test func readingAnUndeclaredOptionTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let parsed = try! ParsedArguments(["model.h5"], specs: InspectCommand.specs + [Options.help])
      _ = parsed.value(Options.imageScale)
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(message.contains("--image-scale, which is not among the options it declares"), "\(message)")
  }

  @Test func readingAFlagAsAValueTraps() async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
      let parsed = try! ParsedArguments(["model.h5"], specs: InspectCommand.specs + [Options.help])
      _ = parsed.value(Options.json)
    }
    let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(message.contains("--json as an option with a value"), "\(message)")
  }
}
