// Package core names the grouping decision of gangmap, the part KAI's own pod-grouper embeds
// (the nested module kaipodgrouper/ binds podgrouper/core/kaiplugin to KAI's plugin hub): from a
// workload's definition to its gang plan to the metadata of its PodGroups and the labels of its
// pods. Its packages are the PodGroup API copy (apis), KAI's keys and releases (kaikeys,
// kairelease, kaiadmission, native), the grouper interface and hub (grouper, hub), the default
// and definition-driven groupers (defaultgrouper, workloadmap), PodGroup metadata and writes
// (podgroup), the owner walk (owners, ownerskip), the per-pod decision (decide) and its KAI-shaped
// form (kaiplugin).
//
// The core reads the cluster through the clients it is given (controller-runtime's client.Reader
// and Writer interfaces); it starts no manager, serves no webhook and keeps no informer cache of
// its own. Those are the standalone runtime's (podgrouper/runtime/...: pod controller, webhook,
// caches, findings, strays, onboarding) and, inside KAI, podgrouper/runtime/inkai's. The arrows
// go one way: definitions/ and gang/ → podgrouper/core → podgrouper/runtime → cmd/, which
// TestLayoutArrowsGoOneWay checks.
package core
