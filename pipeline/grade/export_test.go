package grade

// For the external tests, which read the judge's results through the verdict stage.
var (
	JudgePlan     = judgePlan
	JudgeAttempts = judgeAttempts
)

// FileChecks evaluates a file assertion over a world, for the external tests.
var FileChecks = fileChecks
