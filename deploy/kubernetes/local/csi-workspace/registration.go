package main

import (
	"context"
	"log/slog"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrar answers the kubelet's plugin watcher, which finds its socket
// in plugins_registry: it names the driver and its CSI socket.
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	c   config
	log *slog.Logger
}

// GetInfo tells the kubelet the plugin's type, name and CSI endpoint.
func (r registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.c.driver,
		Endpoint:          r.c.csiSocket,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

// NotifyRegistrationStatus logs the kubelet's verdict.
func (r registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.GetPluginRegistered() {
		r.log.Info("registered with the kubelet", "driver", r.c.driver)
	} else {
		r.log.Error("the kubelet refused the plugin", "driver", r.c.driver, "error", s.GetError())
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
