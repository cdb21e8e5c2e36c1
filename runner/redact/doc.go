// Package redact removes a run's secrets from what skillgate stores: the
// real credential the gateway holds, the judges' credentials and every
// variable a suite names in redactEnv, from answers, transcripts, changed
// files (streamed, in constant memory), faults and errors, so no stored
// result can leak one. It imports only package plan, for the suite's
// redactEnv.
package redact
