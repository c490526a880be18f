// Command otelcol is an OpenTelemetry Collector assembled the way the OpenTelemetry Collector
// Builder (ocb) generates one, with only what edge's tracing tests need: the OTLP receiver (gRPC
// and HTTP) and the file and debug exporters. scripts/otelcol.sh builds it from the Go module
// proxy once and caches the binary; test/integration/otelcol_test.go runs it.
package main

import (
	"log"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// version is the collector release the modules of go.mod belong to; scripts/otelcol.sh names the
// binary after it.
const version = "0.161.0"

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol",
			Description: "OpenTelemetry Collector for edge's tests",
			Version:     version,
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					envprovider.NewFactory(),
					fileprovider.NewFactory(),
				},
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatalf("collector server run finished with error: %v", err)
	}
}

// components is ocb's components.go: the factories the binary has, and the modules they come from.
func components() (otelcol.Factories, error) {
	var err error
	factories := otelcol.Factories{
		// The collector's own logs and (switched off in the tests) metrics.
		Telemetry: otelconftelemetry.NewFactory(),
	}
	factories.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory())
	if err != nil {
		return otelcol.Factories{}, err
	}
	factories.ReceiverModules = map[component.Type]string{
		otlpreceiver.NewFactory().Type(): "go.opentelemetry.io/collector/receiver/otlpreceiver v" + version,
	}
	factories.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](
		debugexporter.NewFactory(),
		fileexporter.NewFactory(),
	)
	if err != nil {
		return otelcol.Factories{}, err
	}
	factories.ExporterModules = map[component.Type]string{
		debugexporter.NewFactory().Type(): "go.opentelemetry.io/collector/exporter/debugexporter v" + version,
		fileexporter.NewFactory().Type():  "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter v" + version,
	}
	return factories, nil
}
