// Package gateway is the cells' only way out: a host-side HTTP server on a
// unix socket, mounted read-only into every cell, where a small static
// forwarder (the forwarder command, embedded) relays the agent's model
// calls, in the provider's format: Anthropic Messages, OpenAI Responses and
// Chat Completions, or Gemini's generateContent (wire.go holds what differs
// by format). It authenticates each call by its cell's dummy key, forwards only
// exact model endpoints to the provider with the real key (which never
// leaves it) or answers them with the scripted model, retries transient
// provider faults, and records per cell the models, tokens, latency, cost
// (PriceTokens) and the faults and refusals, redacted. It sets the suite's
// sampling fields in the requests it forwards (sampling.go), reads a real
// provider's connection from the host (connection.go: base URL, auth,
// extra headers), stores every exchange in the run folder (record.go) and
// serves a recorded run's exchanges again, offline (replay.go). It imports the
// suite's types (scripts, prices, limits), grade's tokens and package
// redact, nothing of the runner. Package standin is the stand-in provider
// the tests put behind it.
package gateway
