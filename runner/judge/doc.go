// Package judge asks a suite's judge about a run's stored rollouts, after
// deterministic grading and from the store alone: every question is one
// conversation (conversation.go) that rubric, pairwise, adjudication and
// rejudging share: the prompt rendered from the judge's template and the
// blinded packet, asked of the judge (a command judge gets the packet
// too), metered under the run folder's spend cap, the reply redacted and
// read, the judgement stored. run.go judges a run (JudgeCells) and reads
// back what it decided (JudgedResults); rejudge.go asks another judge
// about the stored packets; clients.go holds the judge clients behind the
// Judge interface: the providers' HTTP APIs, the scripted model behind its
// own gateway, and a command on the host.
//
// It takes its own Options, imports the pipeline's stages, the store, the
// gateway (for the scripted judge) and the redactor, never the runner.
package judge
