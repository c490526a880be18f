//go:build tools

package apiserver

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
