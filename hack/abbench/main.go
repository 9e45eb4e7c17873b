// Command abbench times shell commands side by side: it runs them in turn,
// round after round (A B, then B A, ...), so a change in the host's load
// reaches every command alike, and prints a markdown table with each
// command's wall time (min, median, mean), its processor time (user +
// system of the command and everything it waited for) and both medians'
// ratios to the last command's. hack/bench-postrender.sh runs it.
//
//	go run ./hack/abbench -runs 30 -warmup 3 -name new -name old 'cmd A' 'cmd B'
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

func main() {
	runs := flag.Int("runs", 20, "timed runs of each command")
	warmup := flag.Int("warmup", 2, "untimed runs of each command first")
	var labels names
	flag.Var(&labels, "name", "a command's name in the table, in order (repeatable); default: the command")
	flag.Parse()
	cmds := flag.Args()
	if len(cmds) < 2 || *runs < 1 {
		fmt.Fprintln(os.Stderr, "usage: abbench [-runs N] [-warmup N] [-name NAME]... CMD CMD...")
		os.Exit(2)
	}
	for len(labels) < len(cmds) {
		labels = append(labels, "`"+cmds[len(labels)]+"`")
	}
	wall := make([][]time.Duration, len(cmds))
	cpu := make([][]time.Duration, len(cmds))
	order := make([]int, len(cmds))
	for i := range order {
		order[i] = i
	}
	for round := range *warmup + *runs {
		for _, i := range order {
			w, c, err := run(cmds[i])
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", cmds[i], err)
				os.Exit(1)
			}
			if round >= *warmup {
				wall[i] = append(wall[i], w)
				cpu[i] = append(cpu[i], c)
			}
		}
		slices.Reverse(order)
	}
	last := len(cmds) - 1
	base := strings.Trim(labels[last], "`")
	fmt.Printf("| command | wall min | wall median | wall mean | CPU (user + sys) median | wall median / %s | CPU median / %s |\n", base, base)
	fmt.Println("|---|---|---|---|---|---|---|")
	for i := range cmds {
		fmt.Printf("| %s | %s | %s | %s | %s | %.2f× | %.2f× |\n", labels[i], ms(slices.Min(wall[i])), ms(median(wall[i])), ms(mean(wall[i])),
			ms(median(cpu[i])), float64(median(wall[i]))/float64(median(wall[last])), float64(median(cpu[i]))/float64(median(cpu[last])))
	}
	fmt.Printf("\n%d runs each, alternating, after %d warm-up runs each.\n", *runs, *warmup)
}

// run runs cmd with sh and returns its wall time and the processor time of
// sh and every process it waited for.
func run(cmd string) (wall, cpu time.Duration, err error) {
	c := exec.Command("sh", "-c", cmd)
	c.Stdout, c.Stderr = nil, os.Stderr
	start := time.Now()
	if err := c.Run(); err != nil {
		return 0, 0, err
	}
	wall = time.Since(start)
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return wall, cpu, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func ms(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.3f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}
