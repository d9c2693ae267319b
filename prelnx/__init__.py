"""prelnx: reproduce the warm-up study of Xiong et al. 2020 (Post-LN vs Pre-LN) with real fairseq training."""
