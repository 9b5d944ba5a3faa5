//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the program in a group of its own so that closing the
// session kills the programs it started too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
