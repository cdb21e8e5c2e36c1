package suite

// The files init writes: the suite, its cases, the stand-in agent and the
// stub skill, as CUE and Markdown text.

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// cueString is s as a CUE string literal.
func cueString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

var cueIdent = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*$`)

// cueLabel is a name as a CUE field label: bare when it can be.
func cueLabel(name string) string {
	switch name {
	case "true", "false", "null", "if", "for", "in", "let", "import", "package", "func":
		return cueString(name)
	}
	if cueIdent.MatchString(name) {
		return name
	}
	return cueString(name)
}

func suiteFile(suite, skill, skillPath string, stub, noiseFloor bool) string {
	replicate := ""
	if noiseFloor {
		replicate = scaffoldReplicate
	}
	where := "The skill under test, named where it is (never copied)"
	if stub {
		where = "A stub skill: write yours there, or evaluate one you have with skillgate init --skill PATH"
	}
	return strings.NewReplacer(
		"SUITE", cueString(suite),
		"SKILLLABEL", cueLabel(skill),
		"SKILLKEY", cueString(skill),
		"SKILLPATH", cueString(skillPath),
		"WHERE", where,
		"STANDIN", standInScript,
		"REPLICATE\n", replicate,
	).Replace(scaffoldSuite)
}

func casesFile(skill, marker string) string {
	return strings.NewReplacer(
		"SKILLKEY", cueString(skill),
		"PURPOSE", cueString("What is the "+skill+" skill for? Answer with the description in its SKILL.md."),
		"MARKER", cueString(marker),
	).Replace(scaffoldCases)
}

const scaffoldSuite = `package suite

import (
	"skillgate.dev/schema"
	"skillgate.dev/schema/agents"
	"skillgate.dev/schema/policies"
)

// Every file of a suite is one expression, schema.#Suite & {...}, so a
// misspelt field is an error at every level. The cases are in cases.cue,
// their workspaces in fixtures/.
schema.#Suite & {
	name: SUITE

	// WHERE.
	skills: SKILLLABEL: path: SKILLPATH

	// A STAND-IN AGENT, NOT A MODEL: a shell script (_standIn below) in
	// skillgate's busybox sandbox. It demonstrates the whole pipeline offline
	// in seconds: the none arm's cells hold no skill file, the forced and
	// automatic arms' cells find the skill and open it, the no-change
	// control is left alone, and every rule of the advisory policy passes
	// because the stand-in acts like an agent that follows the skill once it
	// is installed. It measures skillgate, not the skill: every report says
	// so (standIn).
	//
	// To measure the skill, put a real agent here and real tasks in
	// cases.cue, for example
	//
	//	agent: agents.claudeCode & {model: "claude-sonnet-4-5"}
	//
	// with ANTHROPIC_API_KEY set where skillgate runs (the cells never see it).
	agent: agents.command & {
		standIn: "shell-script stand-in that opens the skill when the prompt names it (suite.cue), with no model"
		command: ["sh", "-c", _standIn]
	}

	trials: 3

	arms: {
		// The baseline: no skill file in the cell.
		none: {}
		// The skill is installed and the prompt names it.
		forced: {skills: [SKILLKEY], activation: "forced"}
		// The skill is installed; the agent decides whether to use it.
		automatic: {skills: [SKILLKEY]}
REPLICATE
	}

	// advisory: forced beats none by 10 points on task cases (uplift),
	// automatic keeps 80% of that (retention), automatic opens the skill
	// where a case requires it and nowhere else (routing), no-change
	// controls pass as often as without the skill (restraint), and no
	// forbidden action. Unify to change a threshold, as in
	// policies.advisory & {uplift: minPoints: 20}.
	policy: policies.advisory

	// _standIn opens an installed skill whose name the prompt gives, as
	// "the NAME skill" (stderr "skillgate: opened skill NAME" reports it),
	// answers a question about a skill from its SKILL.md front matter, and
	// one about NOTES.md from the file. It never writes a file.
	_standIn: #"""
STANDIN		"""#
}
`

// scaffoldReplicate is the replicate arm init --noise-floor adds.
const scaffoldReplicate = `		// A replicate of forced: the same skill, the same way, its own cells.
		// How often its trials differ from forced's, case by case, is the
		// noise floor, and the report says how likely the verdict is to
		// flip between two identical runs. To require both under bounds:
		//
		//	policy: policies.advisory & {noiseFloor: {maxFlipRate: 0.2, maxVerdictFlip: 0.1}}
		"forced-replicate": {replicateOf: "forced"}
`

// standInScript is the stand-in agent's shell script, indented for the
// multi-line string it is written into.
const standInScript = `		prompt=$(cat "$SKILLGATE_PROMPT_FILE")
		used=
		for md in "${SKILLGATE_SKILLS_DIR:-/nonexistent}"/*/SKILL.md; do
			[ -f "$md" ] || continue
			name=$(basename "$(dirname "$md")")
			case "$prompt" in
			*"the $name skill"*)
				echo "skillgate: opened skill $name" >&2
				used=$md
				;;
			esac
		done
		case "$prompt" in
		*SKILL.md*)
			if [ -z "$used" ]; then
				echo "I have no such skill installed, so I cannot say what it is for."
				exit 0
			fi
			echo "Its SKILL.md says:"
			echo
			awk 'NR == 1 && /^---/ { f = 1; next } f && /^---/ { exit } f' "$used"
			;;
		*NOTES.md*)
			echo "NOTES.md says: $(grep -v '^#' NOTES.md | grep . | head -n 1)"
			;;
		*)
			echo "I do not know how to do that."
			;;
		esac
`

const scaffoldCases = `package suite

import "skillgate.dev/schema"

// Two cases the stand-in agent can answer: replace them with real tasks for
// your skill, each with a fixture, assertions and a kind.
schema.#Suite & {
	cases: {
		// A task only an agent with the skill can do: quote its description.
		// The none arm has no skill file, so it fails here; that is the uplift.
		"describe-skill": {
			prompt: PURPOSE
			kind:   "task"
			split:  "train"
			fixture: "fixtures/example"
			routing: skills: required: [SKILLKEY]
			writes: []
			assert: [
				{name: "quotes the skill's description", answer: contains: MARKER},
			]
		}

		// A no-change control: the right move is to answer and change
		// nothing, with or without the skill (restraint).
		"summarize-notes": {
			prompt:  "Summarize NOTES.md in one sentence. Do not change any file."
			kind:    "no-change"
			split:   "train"
			fixture: "fixtures/example"
			writes: []
			assert: [
				{file: "NOTES.md", unchanged: true},
				{answer: contains: "backs off"},
			]
		}
	}
}
`

const scaffoldNotes = "# Notes\n\nThe retry loop now backs off exponentially.\n"

const stubDescription = "Example skill. Replace this description with when an agent should use the skill."

const stubFrontMatter = "name: example\ndescription: " + stubDescription + "\n"

const stubSkill = "---\n" + stubFrontMatter + `---

# Example

Write what the agent should do, step by step, and point to any reference
files in this folder that it should read.
`
