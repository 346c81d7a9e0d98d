// Command coredns is CoreDNS with only the plugins the local cluster's DNS uses: it answers
// the cluster domain from the Kubernetes API and nothing else (no forward plugin is built in,
// so no query can leave the machine). Building a subset this way is CoreDNS's documented way
// to choose plugins at compile time; it keeps out the cloud providers' SDKs of the default build.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The plugins in the order a query passes them (CoreDNS's plugin.cfg order, restricted).
func init() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "loadbalance", "cache", "kubernetes"}
}

func main() {
	coremain.Run()
}
