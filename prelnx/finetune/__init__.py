"""`prelnx finetune`: fine-tune pre-trained BERT-style checkpoints on sentence-pair classification (Figure 5b/c)."""
