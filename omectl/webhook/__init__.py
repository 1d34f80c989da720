"""The admission webhook server omectl serves for every registered cluster."""
