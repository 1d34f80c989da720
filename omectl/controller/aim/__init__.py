"""AMD AIM's reconcilers and watches: AIMService, the v1alpha2 consumers, model caching."""
