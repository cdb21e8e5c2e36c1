package runfolder

// Files at the top of a run folder.
const (
	FilePlan        = "plan.json"
	FileCalibration = "calibration.json"
	FileShard       = "shard.json"
	FileMerge       = "merge.json"
	FileLock        = ".lock"
	// DirStatRecords holds the stat records of the trees placed from the
	// machine's cache (one file per tree, its hex): machine-local, like the
	// lock, so no pack, merge or root digest covers it.
	DirStatRecords = ".stat-records"
	// FilePreflight records each check run on a case's untouched workspace.
	FilePreflight = "preflight.json"
	// FileSequential records where sequential stopping stopped.
	FileSequential = "sequential.json"
	// FileReused lists the rollouts run --reuse took, from where and when.
	FileReused = "reused.json"
	// FileReuseSentinels records run --reuse's drift sentinels: per agent and
	// model, the reused cells run again, their outcomes and the decision.
	FileReuseSentinels = "reuse-sentinels.json"
	// DirSetAside holds the versions a merge did not choose.
	DirSetAside = "merge/set-aside"
)

// Folders of the store, in the run folder.
const (
	DirRollouts       = "store/rollouts"
	DirTrees          = "store/trees"
	DirGrades         = "store/grades"
	DirPackets        = "store/packets"
	DirJudgements     = "store/judgements"
	DirJudgeFailures  = "store/judge-failures"
	DirExchangeLogs   = "store/exchanges/logs"
	DirExchangeBodies = "store/exchanges/bodies"
	DirTmp            = "store/tmp"
	// FileSpend is the spend ledger.
	FileSpend = "store/spend.jsonl"
)

// Files of a stored rollout, inside its folder (DirRollouts/KEY).
const (
	FileRollout = "rollout.json"
	FileAnswer  = "answer.txt"
	FileStdout  = "stdout.txt"
	FileStderr  = "stderr.txt"
	// DirFiles holds the contents of the changed files, one file per digest (its hex).
	DirFiles = "files"
)
