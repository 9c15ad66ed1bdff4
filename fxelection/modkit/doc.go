// Package modkit is what a configuration-document module is made of: the
// module registry (RegisterModule, Modules, GetModule), the interfaces a
// module implements (Module, BackendModule, ClientBackendModule,
// ExtensionModule, Validator, Provisioner, CleanerUpper,
// ContextCleanerUpper), the helpers a backend module is built from
// (NewModuleInfo, Provisioned, SettingLabel, HostPort, HostPorts), the
// setting types (Secret, Duration, BackendRef) and the Context that
// Provision receives.
//
// A backend package registers its document module from init:
//
//	func init() { modkit.RegisterModule(ConfigModule{}) }
//
// It imports this package, not package config, which holds the documents
// themselves (decoding JSON and YAML, placeholders, health commands, the
// fx and Runtime life cycles, pools and lockers) and reads this registry
// when it decodes a document. So the registry edge points from the light
// side: an application that only calls a backend's constructor (say
// redislease.New) links the registry and these small types, and none of
// YAML, os/exec, fxelection/lock, fxelection/pool or fxelection/config;
// an application that loads documents imports package config, and every
// backend package it imports is usable in them, by import alone.
//
// This package depends on the root package fxelection (a backend module
// yields an fxelection.Backend), backendkit and go.uber.org/fx (an
// extension module yields fx options), nothing heavier: keep it so.
package modkit
