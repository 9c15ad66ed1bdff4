// Command etcd is the etcd server (go.etcd.io/etcd/server/v3/etcdmain, the
// release go.mod pins) with etcd's own command line. internal/testserver
// starts it as kube-apiserver's store.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
