// Package grade is the third stage: it grades one cell from what its rollout
// left, its deterministic checks on the final workspace (World), its
// allowed writes, its routing and its cost, into a CellResult; it builds
// the judge's blinded packets, reads the judge's replies, applies them
// (a judge never passes a failed check), adjudicates disputes, and keeps
// the audit queue and ledger. It reads plans (package plan) and suites
// (package suite), never verdicts or reports: what it produces is the
// input of package verdict.
//
// # Blinding
//
// A judge sees a packet: the task (the case's own prompt and seed, never
// an arm's forced prompt), the case's criteria, the fixture's text files,
// each attempt's final diff and final answer and, for a rubric, the
// deterministic checks' names and details. It never holds the arm, the
// skills, their contents, the routing expectations, whether the cell
// passed, or its cell ID: a rubric packet names its attempt by an opaque
// candidate ID (a short digest of the grade key).
//
// What every arm shares is never changed: the prompt, the seed, the
// rubric, the fixture's files (paths and contents), the changed files'
// paths, and the checks' names, which are the suite's own text. Only what
// the agent produced is blinded (the final answer, the added lines of the
// diff, the checks' output), the same way in every arm: each clause (a
// sentence cut at ", ", "; " and ": ") that shows what differs between arms
// is dropped, silently, with no marker, so two arms answering alike give
// equal packets whatever one of them said of its skill. A sentence left
// with nothing goes, a line left with nothing goes, and a diff's hunk
// header counts the added lines that went. What shows an arm:
//
//   - the forced-prompt template's lines around {{prompt}}, with any names
//     where {{skills}} stands (a line of fewer than two words is left out);
//   - skill paths: a skills folder (the agent's skillsDir, .claude/skills,
//     .agents/skills, .codex/skills, $CODEX_HOME/skills), alone or followed
//     by an installed name, and NAME/ENTRY for an installed skill's
//     top-level file or folder (NAME/SKILL.md, NAME/references/...), each
//     as the whole path it starts or ends (/workspace/.claude/skills/NAME/
//     SKILL.md), the SKILLGATE_SKILLS_DIR variable, and SKILL.md itself;
//   - the installed names of the arms' skills, as whole words in any case;
//   - the marker of a secret the store redacted ([REDACTED]);
//   - quoted text of an installed skill's SKILL.md: a clause holding one of
//     its lines (of 20 bytes or more) whole, compared in lower case with
//     Markdown marks and white space set aside. A piece of a line is kept:
//     words a skill prescribes for the answer are the work it changed.
//
// A suite key is never hidden: the agent only ever sees the name a skill
// is installed as, which is the key unless the suite names it otherwise.
// A name, path, line or quote that the shared task text also holds (the
// demo's skill is named changelog and its prompts ask for a changelog
// entry; a fixture file alpha.txt holds the word alpha) is part of the
// task's vocabulary: such a path, line or quote is left as it is, and
// such a name shows an arm only in skill context, where the word skill or
// skills stands next to it (`the changelog skill`, `skill: changelog`,
// `Skill(changelog)`, `a skill named changelog`) or inside a skill path.
package grade
