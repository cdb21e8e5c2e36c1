// Package store is a run folder's store: what every run into the folder
// left, content-addressed by the plan's keys, written atomically (into
// store/tmp, then renamed), so a crash never leaves a partial record where
// a later run would trust it and a crashed run resumes by skipping what is
// stored. It holds the rollouts, the verified snapshots of the trees they
// ran, the grades, the judge's packets, judgements and failed calls, the
// spend ledger and the admission under the spend cap, the calibration's
// record, and reads a stored rollout's answer and final workspace (World)
// as grading and judging need them. It imports the pipeline's stages and
// package gateway (a cell's usage, token prices), never the runner, the
// judge or the backend.
//
// # The run folder
//
// This is the one description of the folder's layout; the constants of
// this package, of pipeline/grade (audit), pipeline/report (reports) and
// runner/judge (rejudged) name its parts.
//
//	plan.json                      the plan the reports describe, written before any cell
//	calibration.json               the calibration checks' outcome, for that plan
//	.lock                          held by the skillgate process using the folder
//	store/rollouts/KEY/            one agent session, by rollout key:
//	    rollout.json                 the normalized record (status, telemetry, changes, usage, setup)
//	    answer.txt                   the final answer as the agent gave it
//	    stdout.txt, stderr.txt       the transcript, capped, redacted
//	    files/HEX                    each changed file's content, by digest, the setup's too
//	store/trees/HEX/               a skill, fixture, case or Dockerfile folder the plan digested,
//	                               by digest, copied and verified before the first cell (PinTree),
//	                               read-only; cells are built, graded and judged from it
//	store/grades/GRADE.json        a cell's result, by grade key (a rubric cell's once judged)
//	store/packets/KEY.json         a blinded packet sent to the judge
//	store/judgements/KEY.json      the judge's reply, usage and what was read from it
//	store/judge-failures/KEY.json  the last failed judge call for KEY, until one succeeds
//	store/spend.jsonl              the spend ledger: one line per priced cell or judge call,
//	                               appended, never rewritten
//	store/tmp/                     what is being written; cleared by OpenStore
//	verdict.json, report.json, report.md, report.html, junit.xml
//	                               the reports, rebuilt from the above alone
//	audit-queue.json, audit.jsonl  the cells a person should audit, and their decisions
//	rejudged/HEX/                  another judge's view of the stored packets (HEX: the
//	                               first 12 hex digits of its digest):
//	    judge.json                   that judge, its digest, the run's plan
//	    judgements/KEY.json          one rejudgement per packet KEY, and per adjudication
//	    verdict.json ... junit.xml, audit-queue.json
//	                                 the rejudged report set
//
// A rubric judgement's KEY is the cell's grade key, which already holds the
// judge's identity (templates, adjudication and seed included): changing
// the judge regrades without a new rollout. The adjudicator's judgement of
// a disputed cell is stored beside it under grade.AdjudicationKey, and the
// cell's grade only once both are. A pairwise judgement's KEY is
// grade.PairwiseKey: both cells' grade keys, the judge, and the
// candidate's position (A or B). A rejudgement's KEY is its packet's.
package store
