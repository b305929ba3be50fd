from plint.shell.model import Word
from plint.sources.hf import hf_facts


def test_hf_trainer_arguments():
    f = hf_facts([Word.of(t) for t in ["--per_device_train_batch_size", "4", "--gradient_accumulation_steps=8",
                                       "--deepspeed", "ds.json", "--bf16", "True", "--block_size", "2048"]])
    assert f["batch.micro"].value == 4 and f["batch.grad_accum"].value == 8
    assert f["deepspeed.config_path"].value == "ds.json" and f["precision"].value == "bf16"
    assert f["model.seq_length"].value == 2048
    assert "precision" not in hf_facts([Word.of("--fp16"), Word.of("False")])
