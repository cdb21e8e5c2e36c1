package grade

// For the external tests, which read the judge's results through the verdict stage.
var (
	JudgePlan     = judgePlan
	JudgeAttempts = judgeAttempts
)
