-- A deleted plan's key (OpenManus plan_id) is free for a new plan: deletion
-- now clears it; this frees the keys of plans deleted before.
UPDATE plans SET plan_key = NULL WHERE deleted_at IS NOT NULL;
