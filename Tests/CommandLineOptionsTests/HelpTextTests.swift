import CommandLineOptions
import Testing

@Suite struct HelpTextTests {
    @Test func theRootListsScenariosSharedOptionsAndEachScenariosOptions() {
        let help = HelpText.render(Sample.tool)
        #expect(help.hasPrefix("usage: sample <scenario> [options]\n\nRuns samples.\n\nscenarios:\n"), "\(help)")
        #expect(help.contains("\n  matchday       N concurrent matches\n"), "\(help)")
        #expect(help.contains("options of every scenario:\n  --check"), "\(help)")
        #expect(help.contains("\n  --help, -h"))
        #expect(help.contains("matchday:\n  --matches N") && help.contains("kickoff-storm:\n  --tokens N"), "\(help)")
    }

    @Test func aSubcommandShowsItsOwnAndTheSharedOptions() {
        let help = HelpText.render(Sample.tool, path: ["kickoff-storm"])
        #expect(help.hasPrefix("usage: sample kickoff-storm [options]\n"), "\(help)")
        #expect(help.contains("options of kickoff-storm:\n  --tokens N") && help.contains("options of every scenario:"), "\(help)")
        #expect(!help.contains("matchday"))
    }

    @Test func requiredOptionsPositionalsAndEnvironmentVariablesShow() {
        let help = HelpText.render(Sample.flat)
        #expect(help.hasPrefix("usage: flat --bundle-id ID [options] [URL]\n"), "\(help)")
        let lines = help.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("  --dev ") && $0.hasSuffix("development mode [SAMPLE_DEV]") }, "\(help)")
        #expect(lines.contains { $0.hasPrefix("  --key KEYID=PATH") })
    }

    @Test func everyLineFitsAndLongNamesPutTheirTextBelow() {
        let long = OptionDeclaration.value("--a-very-long-option-name-indeed", "SOMETHING_LONG",
                                           help: String(repeating: "word ", count: 60))
        let table = HelpText.optionTable([long, Sample.check])
        let lines = table.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.allSatisfy { $0.count <= HelpText.width }, "\(table)")
        #expect(lines.first == "  --a-very-long-option-name-indeed SOMETHING_LONG")
        #expect(lines.dropFirst().first?.hasPrefix(String(repeating: " ", count: 34) + "word") == true, "\(table)")
        #expect(lines.last?.hasPrefix("  --check") == true)
    }
}

@Suite struct NameSuggestionTests {
    @Test func closeNamesAreSuggestedAndFarOnesAreNot() {
        let names = ["--apns-team-id", "--apns-key-id", "--listen", "--help"]
        #expect(NameSuggestion.closest(to: "--apns-teamid", among: names) == "--apns-team-id")
        #expect(NameSuggestion.closest(to: "--LISTEN", among: names) == "--listen")
        #expect(NameSuggestion.closest(to: "--port", among: names) == nil)
        #expect(NameSuggestion.closest(to: "ab", among: ["ac"]) == nil, "one edit in two letters says nothing")
    }
}
