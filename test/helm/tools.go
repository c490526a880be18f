//go:build tools

package helm

import _ "helm.sh/helm/v3/cmd/helm"
