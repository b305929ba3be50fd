"""Launches of the frameworks that drive Megatron-Core or DeepSpeed with arguments or configs of their own (Megatron-SWIFT,
verl, SkyRL, NeMo RL, ROLL, ChatLearn, OpenRLHF, Megatron-Bridge's recipe runner): each reader in plint.reading.sources
knows one framework's keys and defaults; this module builds the Launch from it, with the cluster the framework's driver
places its workers on."""

from __future__ import annotations

import os

from plint.reading.file_lookup import FileLookup
from plint.reading.normalise import Launch
from plint.reading.sources.dotlist import ConfigSettings
from plint.reading.sources.yaml_config import load_mapping
from plint.root import read_text, tree_root
from plint.source import display_path
from plint.values import derived, unresolved


def framework_launch(chain, job, gpu: str | None, lookup: FileLookup, is_module: bool) -> Launch | None:
    """The launch as the framework whose entry point it runs reads it, or None when it runs none plint knows (or its
    config is not read: then it is read as any launch)."""
    from plint.reading.sources.chatlearn import is_chatlearn
    from plint.reading.sources.nemo_rl import is_nemo_rl
    from plint.reading.sources.roll import is_roll_pipeline
    from plint.reading.sources.skyrl import is_skyrl_main, skyrl_megatron
    from plint.reading.sources.swift_megatron import is_megatron_swift
    from plint.reading.sources.verl import is_verl_main

    if chain.entrypoint is None:
        return None
    program, args = chain.entrypoint.text, chain.trainer_args
    if is_megatron_swift(program):
        return _megatron_swift_launch(chain, job, gpu)
    if is_module and is_verl_main(program, args):
        return _verl_launch(chain, job, gpu)
    if is_module and is_skyrl_main(program, args):
        return _skyrl_launch(chain, job, gpu) if skyrl_megatron(program, args) else None
    if not is_module and is_nemo_rl(program, args):
        return _nemo_rl_launch(chain, job, gpu, lookup)
    if not is_module and is_roll_pipeline(program, args):
        return _roll_launch(chain, job, gpu, lookup)
    if not is_module and is_chatlearn(program, args):
        return _chatlearn_launch(chain, job, gpu, lookup)
    return None


def _megatron_swift_launch(chain, job, gpu: str | None) -> Launch:
    """A Megatron-SWIFT launch (plint.reading.sources.swift_megatron): Megatron-Core under ms-swift's own arguments,
    read from them; no Megatron-LM parser or flag catalog judges them."""
    from plint.reading.sources.swift_megatron import megatron_swift_facts, megatron_swift_trainer

    launch = Launch(chain, megatron_swift_trainer(chain.entrypoint), slurm=job, gpu_override=gpu)
    launch.facts = megatron_swift_facts(chain.trainer_args)
    return launch


def _verl_launch(chain, job, gpu: str | None) -> Launch:
    """verl's trainer with a Megatron actor (plint.reading.sources.verl): the actor's layout from the Hydra overrides."""
    from plint.reading.sources.verl import verl_facts, verl_trainer

    launch = Launch(chain, verl_trainer(chain.entrypoint), slurm=job, gpu_override=gpu)
    launch.facts = verl_facts(chain.trainer_args)
    return launch


def _skyrl_launch(chain, job, gpu: str | None) -> Launch:
    """SkyRL's policy on its Megatron backend (plint.reading.sources.skyrl): the layout from the dotlist overrides."""
    from plint.reading.sources.skyrl import skyrl_facts, skyrl_trainer

    launch = Launch(chain, skyrl_trainer(chain.entrypoint), slurm=job, gpu_override=gpu)
    launch.facts = skyrl_facts(chain.entrypoint.text, chain.trainer_args)
    return launch


def _nemo_rl_launch(chain, job, gpu: str | None, lookup: FileLookup) -> Launch | None:
    """NeMo RL's driver (plint.reading.sources.nemo_rl): its config and defaults chain, read from the tree, under the
    overrides; None when the config is not read or is no NeMo RL one. A policy not on Megatron is left unknown."""
    from plint.reading.sources import nemo_rl

    named = nemo_rl.config_word(chain.trainer_args)
    if named is None or named.text is None:
        return None

    def read(name: str) -> str | None:
        source, _ = lookup.config(name)
        return source.text if source is not None else None

    config, files = nemo_rl.load_config(named.text, read)
    if config is None or not isinstance(config.get("cluster"), dict) or not isinstance(config.get("policy"), dict):
        return None
    settings = ConfigSettings(config, display_path(named.text), chain.trainer_args, "NeMo RL", " or its defaults")
    chain.nnodes, chain.workers_per_node, chain.world_size = nemo_rl.nemo_rl_cluster(settings)
    if not nemo_rl.megatron_policy(settings):
        return Launch(chain, derived("unknown", "NeMo RL's policy is not on Megatron", named.value_span), slurm=job)
    launch = Launch(chain, nemo_rl.nemo_rl_trainer(chain.entrypoint), slurm=job, gpu_override=gpu)
    launch.facts = nemo_rl.nemo_rl_facts(settings, chain.entrypoint.text)
    return launch


def _roll_launch(chain, job, gpu: str | None, lookup: FileLookup) -> Launch | None:
    """ROLL's pipeline with a Megatron-trained role (plint.reading.sources.roll): its YAML, read from the tree; None
    when the YAML is not read or no role trains on Megatron."""
    from plint.reading.sources.roll import config_name, roll_facts, roll_trainer, roll_world, trained_role

    name = config_name(chain.entrypoint.text, chain.trainer_args)
    source, _ = lookup.config(name) if name is not None else (None, None)
    config = load_mapping(source.text) if source is not None else None
    found = trained_role(config) if config is not None else None
    if config is None or found is None or source is None:
        return None
    role_name, role = found
    chain.world_size = roll_world(role, role_name, source.path)
    chain.nnodes = chain.workers_per_node = unresolved(
        "ROLL counts the GPUs of a node on the machine at start-up (base_config.py: device_count()): nodes not stated"
    )
    launch = Launch(chain, roll_trainer(chain.entrypoint, role_name, source.path), slurm=job, gpu_override=gpu)
    launch.facts = roll_facts(config, role_name, role, source.path)
    return launch


def _chatlearn_launch(chain, job, gpu: str | None, lookup: FileLookup) -> Launch | None:
    """ChatLearn with a Megatron policy trainer (plint.reading.sources.chatlearn): its template, read from the tree,
    under the launch's overrides; None when the template is not read or its trainer is not Megatron."""
    from plint.reading.sources.chatlearn import chatlearn_facts, chatlearn_world, megatron_backend, template_of

    named = template_of(chain.trainer_args)
    source, _ = lookup.config(named.text) if named is not None and named.text is not None else (None, None)
    template = load_mapping(source.text) if source is not None else None
    if template is None or source is None or named is None:
        return None
    settings = ConfigSettings(template, source.path, chain.trainer_args, "ChatLearn")
    # its workers, whatever the trainer: models.policy_trainer.num_gpu GPUs ChatLearn places itself
    chain.world_size = chatlearn_world(settings)
    chain.nnodes = chain.workers_per_node = unresolved(
        "ChatLearn places its policy trainer's models.policy_trainer.num_gpu GPUs itself: nodes not stated"
    )
    if not megatron_backend(settings):
        return None
    trainer = derived("megatron", "ChatLearn's Megatron policy trainer", named.value_span)
    launch = Launch(chain, trainer, slurm=job, gpu_override=gpu)
    launch.facts = chatlearn_facts(settings)
    return launch


def openrlhf_launch(chain, job, gpu: str | None) -> Launch:
    """One of OpenRLHF's trainers (plint.reading.sources.openrlhf): DeepSpeed under the trainer's own arguments, the
    config it builds from them read from them."""
    from plint.reading.sources.hf import hf_facts
    from plint.reading.sources.openrlhf import openrlhf_facts, openrlhf_trainer

    launch = Launch(chain, openrlhf_trainer(chain.entrypoint), slurm=job, gpu_override=gpu)
    launch.facts = hf_facts(chain.trainer_args)
    openrlhf_facts(launch.facts, chain.trainer_args)
    return launch


def bridge_launch(chain, job, gpu: str | None, entry: str | None, launch_file: str) -> Launch:
    """Megatron-Bridge's recipe runner (plint.reading.sources.megatron_bridge): the recipe, read from the checked tree,
    under the overrides. `entry`: the runner script as read_entry_script found it, relative to the tree."""
    from plint.reading.sources import megatron_bridge as bridge
    from plint.reading.sources.recipe_eval import Unknown

    named = bridge.recipe_word(chain.trainer_args)
    name = named.text if named is not None else None
    tree = tree_root(launch_file)
    entry = os.path.normpath(os.path.join(tree, entry)) if entry is not None else None  # EntryScript.path: relative
    found = bridge.find_recipe(tree, name, read_text) if name is not None else None
    config = (
        bridge.read_recipe(found[0], found[1], name)
        if found is not None and name is not None
        else Unknown("is not a recipe function plint finds once in the checked tree")
    )
    runner = os.path.join(os.path.dirname(entry), "recipe_runner.py") if entry is not None else None
    syncs = bridge.syncs_sequence_length(
        read_text(runner) if runner is not None else None, read_text(entry) if entry is not None else None
    )
    settings = bridge.RecipeSettings(name or "<unknown>", config, chain.trainer_args)
    launch = Launch(chain, bridge.bridge_trainer(chain.entrypoint), slurm=job, gpu_override=gpu)
    launch.facts = bridge.bridge_facts(settings, syncs)
    return launch
