package backend

import (
	"debug/elf"
	"errors"
)

// BusyboxPath is where the host's static busybox is taken from.
const BusyboxPath = "/bin/busybox"

// SandboxApplets are the busybox applets linked into /bin.
var SandboxApplets = []string{
	"sh", "ls", "cat", "grep", "sed", "awk", "find", "mkdir", "rm", "cp", "mv", "echo",
	"printf", "test", "[", "head", "tail", "wc", "sort", "diff", "env", "sleep", "true",
	"false", "id", "touch", "tr", "cut", "dd", "yes", "xargs", "nc", "wget", "ping", "chmod",
	"stat", "date", "basename", "dirname", "tee", "uname", "seq", "timeout", "uniq", "expr",
	"ln", "readlink", "realpath", "pwd", "which", "cmp", "comm", "paste", "rev", "tac", "nl",
	"sha256sum", "md5sum", "base64", "od", "gzip", "gunzip", "tar", "mktemp", "kill", "ps",
}

// CheckStatic fails unless the file is an ELF executable without a dynamic loader: a
// FROM scratch image has no libc for it.
func CheckStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("it is dynamically linked")
		}
	}
	return nil
}

// AddUserland gives an image built FROM scratch its users (root, and agent
// as uid 1000 with the login shell given), /tmp, the agent's home and
// /workspace.
func AddUserland(bc *BuildContext, shell string) {
	bc.AddFile("etc/passwd", 0o644, 0, 0, []byte(
		"root:x:0:0:root:/root:"+shell+"\n"+
			"agent:x:1000:1000:agent:/home/agent:"+shell+"\n"+
			"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"))
	bc.AddFile("etc/group", 0o644, 0, 0, []byte(
		"root:x:0:\n"+
			"agent:x:1000:\n"+
			"nogroup:x:65534:\n"))
	bc.AddDir("root", 0o700, 0, 0)
	bc.AddDir("tmp", 0o1777, 0, 0)
	bc.AddDir("home", 0o755, 0, 0)
	bc.AddDir("home/agent", 0o755, 1000, 1000)
	bc.AddDir("workspace", 0o755, 1000, 1000)
}
