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
// pipeline/runfolder (the plan, the store, a rollout's files; this package
// and runner/gateway alias them), of pipeline/grade (audit),
// pipeline/report (reports) and runner/judge (rejudged) name its parts.
//
//	plan.json                      the plan the reports describe, written before any cell
//	calibration.json               the calibration checks' outcome, for that plan; on
//	                               several agents, every agent's checks, each naming it
//	shard.json                     the shares of the plan's cells the folder holds, when not
//	                               all (skillgate run --shard I/N); its reports say INCOMPLETE
//	merge.json                     in a merged folder: the folders read, and every key found
//	                               stored with different content, with the version chosen
//	merge/set-aside/KIND/KEY/HEX/  a version not chosen (HEX: the first 16 hex digits of its
//	                               content digest), kept as it was stored
//	.lock                          held by the skillgate process using the folder
//	reused.json                    the rollouts run --reuse took from another folder, a pack or
//	                               the machine's cache (merge carries it):
//	                               key, cell, where from, when it ran, when taken (runner/reuse)
//	reuse-sentinels.json           run --reuse's drift sentinels per agent and model: the reused
//	                               cells run again (KEY of plan.SentinelCell), stored against
//	                               fresh outcomes, the paired test and the decision (merge
//	                               carries it, one group per agent and model)
//	store/rollouts/KEY/            one agent session, by rollout key:
//	    rollout.json                 the normalized record (status, telemetry, changes, usage, setup)
//	    answer.txt                   the final answer as the agent gave it
//	    stdout.txt, stderr.txt       the transcript, capped, redacted
//	    files/HEX                    each changed file's content, by digest, the setup's too
//	store/trees/HEX/               a skill, fixture, case or Dockerfile folder the plan digested,
//	                               by digest, copied and verified before the first cell (PinTree),
//	                               read-only; cells are built, graded and judged from it;
//	                               with the machine's cache (runner/cache), its files are
//	                               hard links to the cache's snapshot, verified as placed
//	store/grades/GRADE.json        a cell's result, by grade key (a rubric cell's once judged)
//	store/packets/KEY.json         a blinded packet sent to the judge
//	store/judgements/KEY.json      the judge's reply, usage and what was read from it
//	store/judge-failures/KEY.json  the last failed judge call for KEY, until one succeeds
//	store/exchanges/logs/HEX       one cell rollout's (or judge call's) model exchanges, by the
//	                               digest of its JSON (gateway.ExchangeLog): each request as
//	                               forwarded (sampling set, credentials out) and its response as
//	                               received, in order, with status, models, latency, tokens
//	                               (skillgate's and the provider's own), USD, the sampling set
//	                               and every secret scrubbed (variable, where, how many); a
//	                               rollout names its log in gateway.exchanges, a judgement in
//	                               usage.exchanges; `run --replay` serves it again
//	store/exchanges/bodies/HEX     a request or response body as stored (redacted; a stream
//	                               byte for byte as it came), by digest, shared by every log
//	                               that holds it
//	store/spend.jsonl              the spend ledger: one line per priced cell or judge call, or
//	                               one the spend cap refused (runner/spend admits them),
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
//	chrisbanes/                    for a suite reading chrisbanes/skills' files: their
//	                               results.json, scorecard.md and audit-queue.json
//	regraded/                      the same three files by skillgate regrade: the checks
//	                               as the suite has them now, the original judgements
//	rejudged/results.json, scorecard.md, audit-queue.json
//	                               the same three files by skillgate rejudged-report, from
//	                               the one rejudgement of each packet
//
// A rubric judgement's KEY is the cell's grade key, which already holds the
// judge's identity (templates, adjudication and seed included): changing
// the judge regrades without a new rollout. The adjudicator's judgement of
// a disputed cell is stored beside it under grade.AdjudicationKey, and the
// cell's grade only once both are. A pairwise judgement's KEY is
// grade.PairwiseKey: both cells' grade keys, the judge, and the
// candidate's position (A or B). A rejudgement's KEY is its packet's.
//
// # Evidence
//
// A record (rollout.json, a grade, a judgement, a judge failure) is written
// with its seal, the digest of what it records (seal.go), and every reader
// checks it: Rollout, Grade, Judgement and JudgeFailure refuse a record
// edited by hand, naming its file, and Rollout also checks the answer,
// transcript and changed files beside it. So report, gate, merge, regrade
// and judge verify alike. No command follows a link out of the folder
// (CheckLinks: links live only inside tree snapshots, and stay there), and
// Root digests every stored record into the run's root digest, which the
// verdict prints: a record edited and sealed again changes it.
//
// # Merging run folders
//
// Merge unions run folders of one plan (the shards of a CI matrix, or any
// runs of the same plan.json) into a new folder. Every record is verified
// against its key before it is taken: a rollout's rollout.json names its
// key, each files/HEX holds content of digest HEX, every changed file's
// content is there, answer.txt is the recorded answer, and under a key of
// the plan it ran the plan's fixture and skills; a tree's files give its
// digest; a grade names its key and, under a key of the plan, the plan's
// rollout; a judgement names its key, and under a key of the plan is by the
// plan's judge of the cells that give the key; a judge failure names its
// key; a packet is JSON; the ledgers' lines parse (an audit decision names
// a cell of the plan); calibration.json names rollouts the folder holds;
// reused.json names rollouts the folder holds; each group of
// reuse-sentinels.json is of a plan's agent, names cells of the plan and
// their sentinels, every graded sentinel a rollout the folder holds, and
// counts what its cells say. A folder of
// another plan, a part of the store the merge does not know, or a record
// that fails stops the merge before the new folder exists.
//
// A key stored with the same content in several folders is one record. A
// key stored with different content keeps every version: one is chosen,
// the others are kept under merge/set-aside and listed in merge.json with
// the rule that chose. The rules, in this order, the first that tells two
// versions apart deciding:
//
//  1. Calibration first: each folder's calibration.json with the versions
//     of the rollouts it read is one version; the chosen one brings those
//     rollouts with it (rule "follows the chosen calibration"). So does
//     each reuse sentinel group, an agent and model of reuse-sentinels.json,
//     with the sentinel rollouts it names (rule "follows the chosen reuse
//     sentinels"); every group is carried, one per agent and model.
//  2. A valid record over an invalid one: a rollout or grade not invalid, a
//     judgement without an error; a judge failure is never valid.
//  3. For rollouts, calibrations and sentinel groups: the one that
//     started first (a group: its first sentinel).
//  4. The lowest content digest (a rollout's: its folder's tree digest; a
//     file's: its bytes').
//
// Before those, a grade, packet, judgement or judge failure made from a
// version of a rollout other than the chosen one (every folder holding it
// holds that other version) is set aside: it follows its rollout. A
// judgement taken clears the failures of its key, as a run does. The spend
// and audit ledgers are the union of the folders' lines, in time order.
// rejudged/ is not merged (merge.json says so): rejudge the merged folder.
//
// The merged folder holds shard.json only when its folders' shares, all of
// one count, do not cover the plan; a folder without one holds the whole
// plan. With every share merged, the folder is the plan's: its reports are
// those of one unsharded run with the same stored results.
package store
