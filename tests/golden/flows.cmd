podplan flows --cluster ethernet-10g --input flows.yaml
