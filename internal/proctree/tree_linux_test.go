package proctree

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOrphansKilledAndReaped: in a subreaper, a process the command left
// in a new session is re-parented here, belongs to the tree with
// Options.Orphans, dies with it and is reaped (no zombie is left).
func TestOrphansKilledAndReaped(t *testing.T) {
	if err := Subreaper(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `setsid sleep 100 >/dev/null 2>&1 & echo $!`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	tree := Command(cmd, Options{Orphans: true})
	if err := tree.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := tree.Wait(); err != nil {
		t.Fatal(err)
	}
	if !tree.Alive() {
		t.Fatalf("the tree is gone while process %d (setsid) runs", pid)
	}
	if !tree.End(time.Minute) {
		t.Fatal("the tree is still there a minute after SIGKILL")
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Fatalf("process %d is left (a zombie not reaped)", pid)
	}
}
