// Command testagent is an agent that misbehaves on purpose, so that the tests of the
// runner can show that a cell's container contains it. It is built static and run in an
// image made from the sandbox image.
//
//	testagent net PORT   try 1.1.1.1:80 and 127.0.0.1:PORT; exit 1 if either connects
//	testagent forkbomb   start processes until the kernel refuses
//	testagent oom        allocate memory until killed
//	testagent sleep N    sleep N seconds
//	testagent flood N    write N MiB to stdout
//	testagent env        print the environment
//	testagent write      write in /workspace, /tmp and /home/agent
//	testagent echo       print $SKILLGATE_PROMPT
package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: testagent MODE [ARG]")
	}
	arg := ""
	if len(os.Args) > 2 {
		arg = os.Args[2]
	}
	switch os.Args[1] {
	case "net":
		connected := false
		for _, addr := range []string{"1.1.1.1:80", "127.0.0.1:" + arg} {
			fmt.Printf("connect %s\n", addr)
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				fmt.Printf("failed %s: %v\n", addr, err)
				continue
			}
			connected = true
			fmt.Printf("connected %s\n", addr)
			c.Close()
		}
		if connected {
			os.Exit(1)
		}
	case "forkbomb":
		// Children are single-threaded busybox sleepers, so that the bomb's own Go threads
		// are not what runs out first.
		started, failures := 0, 0
		for failures < 20 {
			if err := exec.Command("/bin/sleep", "60").Start(); err != nil {
				failures++
				fmt.Printf("fork failed after %d processes: %v\n", started, err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			started++
		}
	case "oom":
		var hog [][]byte
		for i := 1; ; i++ {
			b := make([]byte, 8<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			hog = append(hog, b)
			fmt.Printf("allocated %d MiB\n", i*8)
		}
	case "sleep":
		n, err := strconv.Atoi(arg)
		if err != nil {
			fail("sleep: " + err.Error())
		}
		time.Sleep(time.Duration(n) * time.Second)
	case "flood":
		n, err := strconv.Atoi(arg)
		if err != nil {
			fail("flood: " + err.Error())
		}
		chunk := bytes.Repeat([]byte("x"), 1<<16)
		for i := 0; i < n*16; i++ {
			if _, err := os.Stdout.Write(chunk); err != nil {
				fail("flood: " + err.Error())
			}
		}
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
	case "write":
		for _, p := range []string{"/workspace/out.txt", "/tmp/outside.txt", "/home/agent/x"} {
			if err := os.WriteFile(p, []byte("written by testagent\n"), 0o644); err != nil {
				fail(err.Error())
			}
		}
	case "echo":
		fmt.Println(os.Getenv("SKILLGATE_PROMPT"))
	default:
		fail("unknown mode " + os.Args[1])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "testagent:", msg)
	os.Exit(2)
}
