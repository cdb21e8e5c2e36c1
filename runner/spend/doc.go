// Package spend is where the spend cap is enforced: the run folder's cap over
// every run into it (`--spend-cap`), kept by admission before anything is paid,
// never by counting after.
//
// Three things are admitted, each by a stated upper bound of what it can cost:
//
//   - an agent session (a cell), before its container starts: the agent's
//     perCall price when the suite gives one, else the most a past cell of the
//     same rollout key cost in this folder, else the most any cell cost; before
//     any figure exists, cells start one at a time;
//   - every model call of a session, in the gateway, before it is forwarded: its
//     input at most its request's bytes plus a margin, its output at most the
//     request's max_tokens (or the model's stated output limit), at the highest
//     of the suite's token prices; the scripted model's by its script's largest
//     usage;
//   - every judge call, before it is asked: its prompt's bytes plus the margin and
//     the judge's own max_tokens at the judge's prices, or its perCall price.
//
// What is admitted and not yet settled is held against the cap, so what every
// run into the folder spent plus what is held never passes it, whatever many
// cells run at once. A session whose next call does not fit is cut at that call
// (its cell invalid, "spend cap", rerun by the next run); a session or judge call
// that does not fit is not started and is entered in the ledger as refused, so
// reports say "not run (spend cap)" and "not judged (spend cap)".
// A suite whose calls cannot be bounded has --spend-cap refused before anything
// runs, naming the call and why (CheckCap).
package spend
