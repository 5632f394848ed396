import CommandLineOptions
import Testing

/// A small tool with every kind of option, a shared group and subcommands.
enum Sample {
    static let check = OptionDeclaration.flag("--check", help: "exit 1 when a figure misses its target")
    static let results = OptionDeclaration.value("--results", "DIR", help: "where result folders go")
    static let dev = OptionDeclaration.toggle("--dev", help: "development mode", environmentVariable: "SAMPLE_DEV")
    static let key = OptionDeclaration.repeated("--key", "KEYID=PATH", help: "accepted signing key; repeat for several")
    static let bundle = OptionDeclaration.value("--bundle-id", "ID", help: "app bundle id", required: true)
    static let matches = OptionDeclaration.value("--matches", "N", help: "concurrent matches (default 300)")
    static let tokens = OptionDeclaration.value("--tokens", "N", help: "push-to-start tokens")

    static let tool = CommandDeclaration(
        name: "sample", summary: "a sample", description: "Runs samples.",
        sharedGroups: [OptionGroup("options of every scenario", [check, results])],
        subcommands: [
            CommandDeclaration(name: "matchday", summary: "N concurrent matches", groups: [OptionGroup(nil, [matches])]),
            CommandDeclaration(name: "kickoff-storm", summary: "push-to-start at kickoff", groups: [OptionGroup(nil, [tokens, matches])]),
        ],
        subcommandNoun: "scenario", helpListsSubcommandOptions: true)

    static let flat = CommandDeclaration(name: "flat", groups: [OptionGroup(nil, [dev, key, bundle, results])],
                                         positional: PositionalArguments("URL"))
}

@Suite struct CommandLineParserTests {
    @Test func readsEveryKindOfOptionInBothSpellings() throws {
        let parsed = try CommandLineParser.parse(["--bundle-id", "b", "--key", "A=1", "--key=B=2", "--dev=false", "--results=out",
                                                  "--results", "later", "https://x"], command: Sample.flat)
        #expect(parsed.commandPath == ["flat"] && parsed.subcommand == nil)
        #expect(parsed.values(Sample.key) == ["A=1", "B=2"])
        #expect(parsed.value(Sample.results) == "later", "the last one counts")
        #expect(try parsed.toggle(Sample.dev) == false)
        #expect(parsed.positionals == ["https://x"])
        #expect(try CommandLineParser.parse(["--bundle-id", "b", "--dev"], command: Sample.flat).toggle(Sample.dev) == true)
        #expect(try CommandLineParser.parse(["--bundle-id", "b"], command: Sample.flat).toggle(Sample.dev) == nil)
    }

    @Test func subcommandsTakeTheirOwnAndTheSharedOptions() throws {
        let parsed = try CommandLineParser.parse(["kickoff-storm", "--tokens", "5", "--check"], command: Sample.tool)
        #expect(parsed.commandPath == ["sample", "kickoff-storm"] && parsed.commandName == "sample kickoff-storm")
        #expect(parsed.isSet(Sample.check) && !parsed.isSet(Sample.results))
        #expect(try parsed.integer(Sample.tokens, in: 1...Int.max) == 5)
        #expect(try CommandLineParser.parse([], command: Sample.tool).subcommand == nil)
    }

    @Test(arguments: [
        (["matchday", "--tokens", "5"], "unknown option --tokens"),
        (["matchday", "--matchs", "5"], "unknown option --matchs (did you mean --matches?)"),
        (["matchdya"], "unknown scenario 'matchdya' (did you mean matchday?)"),
        (["penalty-shootout"], "unknown scenario 'penalty-shootout'"),
        (["matchday", "--results"], "--results needs a value: --results DIR"),
        (["matchday", "--results", "--check"], "--results needs a value: --results DIR"),
        (["matchday", "--check=yes"], "--check takes no value"),
        (["matchday", "stray"], "unexpected argument 'stray'"),
    ])
    func misuseIsOneTypedError(_ arguments: [String], message: String) {
        let error = #expect(throws: UsageError.self) { try CommandLineParser.parse(arguments, command: Sample.tool) }
        #expect(error?.description == message)
        #expect(error?.command == (arguments.first == "matchday" ? "sample matchday" : "sample"), "the error names the command")
    }

    @Test func requiredOptionsAreReportedAfterEverythingElse() {
        let missing = #expect(throws: UsageError.self) { try CommandLineParser.parse([], command: Sample.flat) }
        #expect(missing?.description == "--bundle-id is required")
        let keyed = CommandDeclaration(name: "k", groups: [OptionGroup(nil, [OptionDeclaration.repeated("--key", "KEYID=PATH", help: "", required: true)])])
        #expect(CommandLineParser.parseReportingAll([], command: keyed).1.map(\.description) == ["at least one --key KEYID=PATH is required"])
        let (_, errors) = CommandLineParser.parseReportingAll(["--bogus", "value", "--results", "a", "b", "c"], command: Sample.flat)
        #expect(errors.map(\.description) == ["unknown option --bogus", "unexpected argument 'c'", "--bundle-id is required"],
                "an unknown option's value goes with it; one URL is allowed")
    }

    @Test func helpAnywhereWinsOverMistakes() throws {
        #expect(try CommandLineParser.parse(["--bogus", "--help"], command: Sample.flat).helpRequested)
        #expect(try CommandLineParser.parse(["matchday", "-h"], command: Sample.tool).helpRequested)
        #expect(try CommandLineParser.parse(["nowhere", "--help"], command: Sample.tool).helpRequested)
    }

    @Test func aDoubleDashEndsTheOptions() throws {
        let parsed = try CommandLineParser.parse(["--bundle-id", "b", "--", "--not-an-option"], command: Sample.flat)
        #expect(parsed.positionals == ["--not-an-option"])
        #expect(try CommandLineParser.parse(["--bundle-id", "-5"], command: Sample.flat).value(Sample.bundle) == "-5",
                "a single dash does not stop a value")
    }

    @Test func typedReadersNameTheOptionAndTheValue() throws {
        let parsed = try CommandLineParser.parse(["matchday", "--matches", "zero", "--results", "0.5"], command: Sample.tool)
        func message(_ read: () throws -> Void) -> String? {
            do { try read(); return nil } catch { return (error as? UsageError)?.line() }
        }
        #expect(message { _ = try parsed.integer(Sample.matches, in: 1...Int.max) } == "sample matchday: --matches takes a positive whole number, got zero")
        #expect(message { _ = try parsed.integer(Sample.results, in: 1...256) } == "sample matchday: --results takes a whole number from 1 to 256, got 0.5")
        #expect(message { _ = try parsed.integer(Sample.matches, in: 0...Int.max) } == "sample matchday: --matches takes a whole number, 0 or more, got zero")
        #expect(try parsed.number(Sample.results, in: 0...1) == 0.5)
        #expect(message { _ = try parsed.number(Sample.matches, in: 0...1) } == "sample matchday: --matches takes a number from 0 to 1, got zero")
        enum Fault: String, CaseIterable { case auto, tmpfs, faultFile = "fault-file" }
        #expect(message { _ = try parsed.choice(Sample.matches, as: Fault.self) } == "sample matchday: --matches takes auto, tmpfs or fault-file, got zero")
        #expect(try parsed.integer(Sample.tokens, in: 0...1) == nil, "not given")
    }

    @Test func theLineNamesTheProgramAndPointsAtHelpWhenThereIsNoSuggestion() {
        #expect(UsageError(.unknownOption("--x", suggestion: nil)).line(program: "sample matchday")
                == "sample matchday: unknown option --x (see sample matchday --help)")
        #expect(UsageError(.unknownOption("--chek", suggestion: "--check")).line(program: "sample")
                == "sample: unknown option --chek (did you mean --check?)")
        #expect(UsageError.invalidValue("--matches", "takes a positive whole number, got 0").line(program: "sample")
                == "sample: --matches takes a positive whole number, got 0")
        #expect(UsageError.exitStatus == 64)
    }
}
