"""prelnx: reproduce the warm-up study of Xiong et al. 2020 (Post-LN vs Pre-LN) with real fairseq training."""

import logging

# fairseq 0.12 logs "Please install tensorboardX" at INFO whenever its tasks are imported in process (binarizing,
# evaluation, the gradient study); prelnx writes TensorBoard itself, so the notice is only noise.
logging.getLogger("fairseq.tasks.text_to_speech").setLevel(logging.WARNING)
