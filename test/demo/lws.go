package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/opendatahub-io/odh-serving/test/kwokcluster"
	"github.com/opendatahub-io/odh-serving/test/localcluster/detach"
)

// startLWS runs the LeaderWorkerSet operator (test/kwokcluster) as a
// detached process, installs its webhooks and waits until the API server
// reaches them. The LeaderWorkerSet CRD must be established.
func (d *demo) startLWS(ctx context.Context) error {
	port, err := d.claimPort()
	if err != nil {
		return err
	}
	l, err := kwokcluster.PrepareLWS(d.restCfg, d.assets, filepath.Join(d.cfg.Dir, "kwokcluster"), port.Number)
	if err != nil {
		return err
	}
	proc, done, err := detach.Start(l.Process.Args, nil, l.Process.Log, port.File())
	if err != nil {
		return err
	}
	d.clusterPIDs = append(d.clusterPIDs, proc.Pid)
	d.onTeardown(stopProcess(proc, d.cfg.Dir))
	if err := d.saveState(); err != nil {
		return err
	}
	if err := l.InstallWebhooks(ctx, d.c); err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	alive := d.anyExited([]kwokcluster.Process{l.Process}, []<-chan error{done})
	if err := kwokcluster.WaitLWS(waitCtx, d.c, alive); err != nil {
		return err
	}
	d.say("LeaderWorkerSet operator (sigs.k8s.io/lws) pid %d, log %s: LeaderWorkerSets become StatefulSets and Pods", proc.Pid, d.rel(l.Process.Log))
	d.say("its webhooks (pods labelled with their group, LeaderWorkerSets defaulted) at https://127.0.0.1:%d, with a certificate made here: %s", port.Number, andList(kwokcluster.LWSWebhookConfigurations))
	return nil
}

// anyExited returns a check that fails, with the end of its log, once one
// of procs has exited (exited[i] is procs[i]'s).
func (d *demo) anyExited(procs []kwokcluster.Process, exited []<-chan error) func() error {
	return func() error {
		for i, done := range exited {
			select {
			case err := <-done:
				return fmt.Errorf("%s exited (%w); %s ends with:\n%s", procs[i].Name, err, d.rel(procs[i].Log), tailFile(procs[i].Log))
			default:
			}
		}
		return nil
	}
}
